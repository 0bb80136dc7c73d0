import Foundation
import Replica

/// The lab's own fold: the union of every node's exported events ingested
/// into a fresh `EventLog` in a temporary directory, its items read back.
public enum ReferenceFold {
    /// The events of `exports` (NDJSON, one export per node), each once, by
    /// event id; the exports' certificate and signed-head lines are skipped.
    public static func union(_ exports: [String]) throws -> [Event] {
        var seen: Set<UUID> = []
        var events: [Event] = []
        for export in exports {
            for line in export.split(separator: "\n") where !line.isEmpty && !isProofLine(line) {
                let event = try EventJSON.event(fromLine: String(line))
                if seen.insert(event.eventID).inserted { events.append(event) }
            }
        }
        return events
    }

    private static func isProofLine(_ line: Substring) -> Bool {
        var bytes = Array(line.utf8)
        return bytes.withUnsafeMutableBufferPointer { ExportProof.isProofLine(UnsafeBufferPointer($0)) }
    }

    /// The items (deleted ones included) by id that folding `events` gives.
    public static func items(of events: [Event]) throws -> [String: ItemState] {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("peerd-lab-fold-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let log = try EventLog.create(at: directory.appendingPathComponent("fold.db").path, replicaID: "lab-fold")
        // Feed by feed in seq order, so that every batch extends its feeds without a gap.
        let ordered = events.sorted { ($0.feed, $0.seq) < ($1.feed, $1.seq) }
        var start = 0
        while start < ordered.count {
            let end = min(start + 500, ordered.count)
            _ = try log.ingest(Array(ordered[start..<end]))
            start = end
        }
        var states: [String: ItemState] = [:]
        for item in try log.projections(Item.self) { states[item.id] = ItemState(item) }
        return states
    }
}
