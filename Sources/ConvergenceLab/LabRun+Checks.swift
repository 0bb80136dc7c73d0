import ChildProcesses
import Foundation
import LabReport
import NetworkLab
import Replica

/// Byte counts, the planted divergence, and the checks with the per-node figures.
extension LabRun {
    /// The bytes host `host`'s daemon has sent and received (`/metrics`), nil when it does not answer.
    func metrics(_ host: Int) async throws -> (sent: Int64, received: Int64)? {
        let reply = try await NodeAPI(lab: lab, host: host).request("GET", "/metrics")
        guard reply.succeeded else { return nil }
        func total(_ metric: String) -> Int64 {
            reply.body.split(separator: "\n").filter { $0.hasPrefix(metric + " ") || $0.hasPrefix(metric + "{") }
                .compactMap { Double($0.split(separator: " ").last ?? "").map { Int64($0) } }.reduce(0, +)
        }
        return (total("peersync_bytes_sent_total"), total("peersync_bytes_received_total"))
    }

    /// Adds what host `host`'s daemon counted so far to ``bytesBefore``, before it is stopped.
    func countBytesBeforeStop(_ host: Int) async throws {
        guard let counted = try await metrics(host) else { return }
        let before = bytesBefore[host] ?? (0, 0)
        bytesBefore[host] = (before.sent + counted.sent, before.received + counted.received)
    }

    // MARK: The planted divergence

    /// Stops the last peer, removes the newest event of another replica's feed from its `replica.db`,
    /// and starts it again: a divergence the checks must find.
    func plantDivergence() async throws {
        phase = "plant"
        let host = configuration.peers
        let member = nodes.member(on: host)
        try await countBytesBeforeStop(host)
        let started = nowMs
        try await nodes.stop(host)
        let database = member.node.data.appendingPathComponent("replica.db").path
        // The newest event of another replica, whether a row or in a block row (docs/storage.md).
        let query = """
            SELECT 'row', local_offset FROM events JOIN feeds ON feeds.id = events.feed
            WHERE feeds.replica_id <> '\(member.node.replicaID)'
            UNION ALL
            SELECT 'block', first_offset FROM event_blocks JOIN feeds ON feeds.id = event_blocks.feed
            WHERE feeds.replica_id <> '\(member.node.replicaID)'
            ORDER BY 2 DESC LIMIT 1;
            """
        let found = try await ChildProcess.run(URL(fileURLWithPath: "/usr/bin/sqlite3"), [database, query])
        let fields = found.stdout.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: "|")
        guard found.status == 0, fields.count == 2, let local = Int64(fields[1]) else {
            throw LabFailure("--plant divergence: no event of another replica on \(member.node.name): \(found)")
        }
        let table = fields[0] == "row" ? "events WHERE local_offset" : "event_blocks WHERE first_offset"
        let removed = try await ChildProcess.run(
            URL(fileURLWithPath: "/usr/bin/sqlite3"),
            [database, "PRAGMA foreign_keys=OFF; DELETE FROM \(table) = \(local);"])
        guard removed.status == 0 else { throw LabFailure("--plant divergence: \(removed)") }
        try await nodes.startDaemon(host)
        faultRecords.append(
            LabReport.Fault(
                kind: "plant", startMs: started, endMs: nowMs, nodes: [member.node.name],
                description:
                    "\(fields[0]) at local offset \(local) removed from \(member.node.name)'s replica.db (test only)")
        )
        notes.append("planted: \(fields[0]) at local offset \(local) removed from \(member.node.name)'s replica.db")
    }

    // MARK: Checks

    func check(settled: Settled, lastHealMs: Int64) async throws -> ([LabReport.Node], [LabReport.Check]) {
        var observations: [NodeObservation] = []
        var exports: [String] = []
        var reports: [LabReport.Node] = []
        for member in nodes.members {
            let node = member.node
            let api = NodeAPI(lab: lab, host: node.host)
            let statusReply = try await api.request("GET", "/status", timeoutSeconds: 10)
            let status = try JSONDecoder().decode(NodeStatus.self, from: Data(statusReply.body.utf8))
            let itemsReply = try await api.request("GET", "/items?include_deleted=true", timeoutSeconds: 10)
            let exported = try await ChildProcess.run(
                URL(fileURLWithPath: configuration.peerd), ["export", "--data", node.data.path])
            guard exported.status == 0 else { throw LabFailure("peerd export of \(node): \(exported)") }
            exports.append(exported.stdout)
            let events = try ReferenceFold.union([exported.stdout])
            observations.append(
                NodeObservation(
                    name: node.name, cursor: status.cursorHeads, stateHash: status.state_hash, forks: status.forks,
                    eventIDs: Set(events.map { "\($0.eventID)".lowercased() }),
                    items: try ItemList.states(itemsReply.body)))
            nodes.notePeakRSS(node.host)
            let counted = try await metrics(node.host) ?? (0, 0)
            let before = bytesBefore[node.host] ?? (0, 0)
            reports.append(
                LabReport.Node(
                    name: node.name, host: node.host, role: member.role, replicaID: node.replicaID,
                    events: status.event_count, cursor: status.cursorHeads, stateHash: status.state_hash,
                    convergedAfterHealMs: settled.convergedAt[node.name].map { $0 - lastHealMs },
                    bytesSent: before.sent + counted.sent, bytesReceived: before.received + counted.received,
                    peakRSSBytes: nodes.peakRSS[node.host] ?? 0))
        }
        let union = try ReferenceFold.union(exports)
        let eventBytes = union.reduce(0) { $0 + EventJSON.line(for: $1, offset: nil, arrivalTimeMs: nil).utf8.count }
        notes.append("\(union.count) distinct events, \(eventBytes) bytes as NDJSON without server fields")
        let reference = try ReferenceFold.items(of: union)
        let acknowledgedWrites = acknowledged.keys.sorted().compactMap { acknowledged[$0] }
        let retryPairs = retries.compactMap { pair in
            acknowledged[pair.retry].flatMap { retry in acknowledged[pair.original].map { (retry, $0) } }
        }
        let convergence = LabReport.Check(
            name: "converged-after-heal", passed: settled.convergedAtMs != nil,
            details: settled.convergedAtMs == nil
                ? ["no common state within \(configuration.settleMs) ms of the last heal"] + settled.laggards : [])
        let checks = [
            convergence,
            LabChecks.sameState(observations),
            LabChecks.sameEvents(observations),
            LabChecks.acknowledgedWritesEverywhere(acknowledgedWrites, observations),
            LabChecks.projectionsMatchFold(reference, observations),
            LabChecks.noForks(observations),
            LabChecks.retriesIdempotent(retryPairs),
        ]
        return (reports, checks)
    }
}

/// The parts of `GET /status` the checks read.
struct NodeStatus: Decodable {
    struct Head: Decodable {
        var replica_id: String
        var scope: String
        var seq: UInt64
    }

    var cursor: [Head]
    var state_hash: String
    var event_count: Int64
    var forks: Int64

    var cursorHeads: [String: UInt64] {
        Dictionary(cursor.map { ("\($0.replica_id)/\($0.scope)", $0.seq) }, uniquingKeysWith: max)
    }
}

/// What the fold made of the workload's sessions.
extension LabRun {
    /// Over every item a claim or takeover was acknowledged for, from the first node's
    /// `GET /entities/item/ID/session`: the claims that did not stand, and the events dropped under a holder.
    func sessionOutcomes() async throws -> (overruled: Int, dropped: Int) {
        let claimed = Set(acknowledged.values.filter { $0.kind == "claim" || $0.kind == "takeover" }.map(\.item))
        let api = NodeAPI(lab: lab, host: nodes.members[0].node.host)
        var (overruled, dropped) = (0, 0)
        for item in claimed.sorted() {
            let reply = try await api.request("GET", "/entities/item/\(item)/session", timeoutSeconds: 10)
            guard reply.succeeded, let session = reply.object else {
                throw LabFailure("GET /entities/item/\(item)/session on n1: \(reply.status) \(reply.body)")
            }
            let claims = session["claims"] as? [[String: Any]] ?? []
            overruled += claims.count { ($0["stood"] as? Bool) == false }
            dropped += session["dropped_count"] as? Int ?? 0
        }
        return (overruled, dropped)
    }
}
