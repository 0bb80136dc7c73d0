/// The conflicts a run's workload made, counted from its writes and faults
/// (and, for sessions, from what the fold decided): what the checks proved
/// convergence under (docs/lab.md, "Conflicts").
///
/// ```swift
/// var conflicts = LabReport.Conflicts.tally(report.writes, faults: report.faults)
/// conflicts.claimsOverruled = 2  // from GET /entities/item/ID/session after the run
/// ```
extension LabReport {
    public struct Conflicts: Codable, Sendable, Equatable {
        /// Two acknowledged edits of one item from different nodes are concurrent when they were sent less than
        /// this apart, or while a partition kept their nodes apart.
        public static let windowMs: Int64 = 1_000

        /// Acknowledged edits (`rename`, `quantity`, `note`) concurrent with an acknowledged edit of the same item
        /// on another node.
        public var concurrentEdits: Int
        /// Acknowledged edits of an item on another node than the one that deleted it, sent from ``windowMs``
        /// before the delete on: the editing node had not seen the delete (else it refuses with `deleted`).
        public var editsAgainstDelete: Int
        /// Acknowledged undos.
        public var undos: Int
        /// Acknowledged undos concurrent with an acknowledged edit of the same item on another node.
        public var undosAgainstEdit: Int
        /// Acknowledged claims, and acknowledged takeovers (a claim of an item another node holds).
        public var claims: Int
        public var takeovers: Int
        /// Acknowledged releases.
        public var releases: Int
        /// Writes and claims refused because another writer held the item (`entity_held`, `taken_over`, and for
        /// a claim `claim_refused` by a relay or `claim_needs_grant`).
        public var refusedByHolder: Int
        /// Claims that the fold did not let stand (two claims that both saw the item free: the later one in
        /// the canonical order), from the first node's session reports; nil when not asked.
        public var claimsOverruled: Int?
        /// Events the fold kept but did not apply (the dropped tails of held items), from the same reports.
        public var droppedEvents: Int?

        public init(
            concurrentEdits: Int = 0, editsAgainstDelete: Int = 0, undos: Int = 0, undosAgainstEdit: Int = 0,
            claims: Int = 0, takeovers: Int = 0, releases: Int = 0, refusedByHolder: Int = 0,
            claimsOverruled: Int? = nil, droppedEvents: Int? = nil
        ) {
            self.concurrentEdits = concurrentEdits
            self.editsAgainstDelete = editsAgainstDelete
            self.undos = undos
            self.undosAgainstEdit = undosAgainstEdit
            self.claims = claims
            self.takeovers = takeovers
            self.releases = releases
            self.refusedByHolder = refusedByHolder
            self.claimsOverruled = claimsOverruled
            self.droppedEvents = droppedEvents
        }

        static let edits: Set<String> = ["rename", "quantity", "note"]
        /// The API's codes for a write or claim refused because another writer holds the item (docs/http-api.md).
        static let holderRefusals: Set<String> = ["entity_held", "taken_over", "claim_refused", "claim_needs_grant"]

        /// The counts of `writes` under `faults` (partitions: the band's `nodes` against the rest).
        public static func tally(_ writes: [Write], faults: [Fault]) -> Conflicts {
            var conflicts = Conflicts()
            let acknowledged = writes.filter(\.acknowledged)
            let byItem = Dictionary(grouping: acknowledged, by: \.item)
            let partitions = faults.filter { $0.kind == "partition" }
            func concurrent(_ one: Write, _ other: Write) -> Bool {
                guard one.node != other.node else { return false }
                if abs(one.atMs - other.atMs) < windowMs { return true }
                return partitions.contains { band in
                    (band.startMs...band.endMs).contains(one.atMs) && (band.startMs...band.endMs).contains(other.atMs)
                        && band.nodes.contains(one.node) != band.nodes.contains(other.node)
                }
            }
            for (_, writes) in byItem {
                let edits = writes.filter { Self.edits.contains($0.kind) }
                let deletes = writes.filter { $0.kind == "delete" }
                for edit in edits {
                    if edits.contains(where: { concurrent(edit, $0) }) { conflicts.concurrentEdits += 1 }
                    if deletes.contains(where: { $0.node != edit.node && edit.atMs > $0.atMs - windowMs }) {
                        conflicts.editsAgainstDelete += 1
                    }
                }
                for undo in writes where undo.kind == "undo" && edits.contains(where: { concurrent(undo, $0) }) {
                    conflicts.undosAgainstEdit += 1
                }
            }
            conflicts.undos = acknowledged.count { $0.kind == "undo" }
            conflicts.claims = acknowledged.count { $0.kind == "claim" }
            conflicts.takeovers = acknowledged.count { $0.kind == "takeover" }
            conflicts.releases = acknowledged.count { $0.kind == "release" }
            conflicts.refusedByHolder = writes.count { $0.refusal.map(holderRefusals.contains) ?? false }
            return conflicts
        }

        /// One line for people: `412 concurrent edits, 37 edits against a delete, …`.
        public var summary: String {
            var parts = [
                "\(concurrentEdits) concurrent edits", "\(editsAgainstDelete) edits against a delete",
                "\(undos) undos (\(undosAgainstEdit) against an edit)", "\(claims) claims",
                "\(takeovers) takeovers", "\(releases) releases", "\(refusedByHolder) writes refused by a holder",
            ]
            if let claimsOverruled { parts.append("\(claimsOverruled) claims overruled by the fold") }
            if let droppedEvents { parts.append("\(droppedEvents) events dropped under a holder") }
            return parts.joined(separator: ", ")
        }
    }
}
