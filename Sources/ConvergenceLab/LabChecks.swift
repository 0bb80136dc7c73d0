import LabReport

/// What the checks after the last heal look at on one node.
public struct NodeObservation: Sendable {
    public var name: String
    /// The vector cursor, `replica_id/scope` → seq, from `/status`.
    public var cursor: [String: UInt64]
    public var stateHash: String
    public var forks: Int64
    /// The `replica_event_id`s of every event it exports.
    public var eventIDs: Set<String>
    /// Its items (deleted ones included) by id, from `GET /items?include_deleted=true`.
    public var items: [String: ItemState]

    public init(
        name: String, cursor: [String: UInt64], stateHash: String, forks: Int64, eventIDs: Set<String>,
        items: [String: ItemState]
    ) {
        self.name = name
        self.cursor = cursor
        self.stateHash = stateHash
        self.forks = forks
        self.eventIDs = eventIDs
        self.items = items
    }
}

/// A write the API acknowledged (2xx), with the event id it answered.
public struct AcknowledgedWrite: Sendable {
    public var index: Int
    public var node: String
    public var kind: String
    public var item: String
    public var eventID: String

    public init(index: Int, node: String, kind: String, item: String, eventID: String) {
        self.index = index
        self.node = node
        self.kind = kind
        self.item = item
        self.eventID = eventID
    }
}

/// The checks after the last heal (docs/lab.md, "Checks"): pure functions of what the nodes show.
public enum LabChecks {
    /// Every node has the same vector cursor and state hash.
    public static func sameState(_ nodes: [NodeObservation]) -> LabReport.Check {
        guard let first = nodes.first else {
            return LabReport.Check(name: "same-state", passed: false, details: ["no nodes"])
        }
        var details: [String] = []
        for node in nodes.dropFirst() where node.cursor != first.cursor || node.stateHash != first.stateHash {
            var line = "\(node.name) differs from \(first.name):"
            if node.stateHash != first.stateHash { line += " state hash \(node.stateHash) vs \(first.stateHash);" }
            for feed in Set(node.cursor.keys).union(first.cursor.keys).sorted()
            where node.cursor[feed] != first.cursor[feed] {
                line += " \(feed) seq \(node.cursor[feed] ?? 0) vs \(first.cursor[feed] ?? 0);"
            }
            details.append(line)
        }
        return LabReport.Check(name: "same-state", passed: details.isEmpty, details: details)
    }

    /// Every node holds every event any node holds (by event id).
    public static func sameEvents(_ nodes: [NodeObservation]) -> LabReport.Check {
        let union = nodes.reduce(into: Set<String>()) { $0.formUnion($1.eventIDs) }
        var details: [String] = []
        for node in nodes {
            let missing = union.subtracting(node.eventIDs).sorted()
            guard !missing.isEmpty else { continue }
            let shown = missing.prefix(10).joined(separator: " ") + (missing.count > 10 ? " …" : "")
            details.append("\(node.name) lacks \(missing.count) of the \(union.count) events: \(shown)")
        }
        return LabReport.Check(name: "same-events", passed: details.isEmpty, details: details)
    }

    /// Every write the API acknowledged is on every node, by event id.
    public static func acknowledgedWritesEverywhere(_ writes: [AcknowledgedWrite], _ nodes: [NodeObservation])
        -> LabReport.Check
    {
        var details: [String] = []
        for write in writes {
            let missing = nodes.filter { !$0.eventIDs.contains(write.eventID) }.map(\.name)
            guard !missing.isEmpty else { continue }
            details.append(
                "write \(write.index) (\(write.kind) of item \(write.item) on \(write.node), event \(write.eventID)) "
                    + "is missing on \(missing.joined(separator: " "))")
        }
        return LabReport.Check(name: "acknowledged-writes", passed: details.isEmpty, details: details)
    }

    /// Each node's projections equal `reference`, the lab's own fold of the union of all nodes' events.
    public static func projectionsMatchFold(_ reference: [String: ItemState], _ nodes: [NodeObservation])
        -> LabReport.Check
    {
        var details: [String] = []
        for node in nodes {
            for id in Set(reference.keys).union(node.items.keys).sorted() where node.items[id] != reference[id] {
                let shown = node.items[id].map(\.description) ?? "absent"
                let folded = reference[id].map(\.description) ?? "absent"
                details.append("\(node.name) item \(id): node has \(shown); the fold of the union has \(folded)")
            }
        }
        return LabReport.Check(name: "projections-match-fold", passed: details.isEmpty, details: details)
    }

    /// No node reports a fork: the lab made none.
    public static func noForks(_ nodes: [NodeObservation]) -> LabReport.Check {
        let details = nodes.filter { $0.forks != 0 }.map { "\($0.name) reports \($0.forks) forks" }
        return LabReport.Check(name: "no-forks", passed: details.isEmpty, details: details)
    }

    /// Each retry with an `Idempotency-Key` was answered with the event of the first request with that key.
    public static func retriesIdempotent(_ pairs: [(retry: AcknowledgedWrite, original: AcknowledgedWrite)])
        -> LabReport.Check
    {
        let details = pairs.filter { $0.retry.eventID != $0.original.eventID }.map {
            "write \($0.retry.index) on \($0.retry.node) retried write \($0.original.index) and got event "
                + "\($0.retry.eventID), not \($0.original.eventID)"
        }
        return LabReport.Check(name: "idempotent-retries", passed: details.isEmpty, details: details)
    }
}
