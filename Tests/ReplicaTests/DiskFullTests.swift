import Foundation
import TestSupport
import Testing

@testable import Replica

/// A full disk must roll the whole transaction back and say so.
///
/// `PRAGMA max_page_count` makes SQLite report `SQLITE_FULL` exactly as a full
/// disk does, without needing a small filesystem.
@Suite("Disk full")
struct DiskFullTests {
    let directory: TemporaryDirectory
    init() throws { directory = try TemporaryDirectory() }

    @Test("A batch that does not fit reports diskFull and leaves the log as it was")
    func batchThatDoesNotFit() throws {
        let log = try EventLog.create(at: directory.path("full.db"), replicaID: "r1")
        try log.append(NewEvent(item: "i0", .created(name: "Bolts", quantity: 1)))
        let pages = try #require(try log.db.scalarInt("PRAGMA page_count"))
        try log.db.execute("PRAGMA max_page_count = \(pages + 2)")
        let hashBefore = try log.stateHash()
        let cursorBefore = try log.cursor()

        let note = String(repeating: "x", count: 2_000)
        let batch = (1...200).map { NewEvent(item: "i\($0)", .created(name: note, quantity: Int64($0))) }
        #expect {
            try log.append(batch)
        } throws: { error in
            guard case EventLogError.diskFull = error else { return false }
            return "\(error)".contains("nothing was written")
        }

        #expect(try log.cursor() == cursorBefore)
        #expect(try log.stateHash() == hashBefore)
        #expect(try log.eventCount() == 1)
        // Once there is room again, the same batch goes through.
        try log.db.execute("PRAGMA max_page_count = 1000000")
        #expect(try log.append(batch).count == 200)
        #expect(try log.eventCount() == 201)
    }

    @Test("An ingest that does not fit reports diskFull and stores nothing")
    func ingestThatDoesNotFit() throws {
        let log = try EventLog.create(at: directory.path("full.db"), replicaID: "r1")
        let pages = try #require(try log.db.scalarInt("PRAGMA page_count"))
        try log.db.execute("PRAGMA max_page_count = \(pages + 2)")
        let note = String(repeating: "y", count: 2_000)
        let batch = (1...200).map { seq in
            Fixtures.itemEvent(
                "peer", seq: UInt64(seq), time: Int64(seq), item: "i\(seq)", .created(name: note, quantity: 1))
        }
        #expect(throws: EventLogError.self) { try log.ingest(batch) }
        #expect(try log.cursor() == VectorCursor())
        #expect(try log.eventCount() == 0)
    }
}
