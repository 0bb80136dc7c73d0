import Foundation
import TestSupport
import Testing

@testable import Replica

/// An idle log must hold no read snapshot: one left open by a statement
/// stops checkpoints, and the WAL then grows without bound.
@Suite("Checkpoints")
struct CheckpointTests {
    let directory: TemporaryDirectory
    init() throws { directory = try TemporaryDirectory() }

    @Test("After writes and reads the WAL can be checkpointed and truncated by another connection")
    func idleLogHoldsNoSnapshot() throws {
        let path = directory.path("a.db")
        let log = try EventLog.create(at: path, replicaID: "a")
        for batch in 0..<5 {
            try log.append((0..<100).map { NewEvent(item: "i\($0)", .quantityChanged(quantity: Int64(batch))) })
        }
        try log.ingest([
            Event(
                eventID: UUID(), feed: FeedID(replicaID: "b"), seq: 1, timeMs: 1, entityType: "item", entityID: "i1",
                payload: ItemEvent.deleted.payload)
        ])
        // Every kind of read leaves its statement stepped part-way.
        _ = try log.projection(Item.self, id: "i1")
        _ = try log.cursor()
        _ = try log.events(after: 0, limit: 3)
        _ = try log.stateHash()
        var pages = try log.missingEventPages(for: VectorCursor(), maxEvents: 10)
        _ = try pages.next()

        let other = try SQLiteConnection(path: path, create: false)
        let statement = try other.cached("PRAGMA wal_checkpoint(TRUNCATE)")
        #expect(try statement.step())
        #expect(statement.int64(0) == 0, "the checkpoint was blocked by an open read snapshot")
        statement.reset()
        let walSize = try FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int
        #expect(walSize == 0)
    }
}
