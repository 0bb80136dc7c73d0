import Foundation
import TestSupport
import Testing

@testable import Replica

/// The thin-client index in two tables (docs/storage.md "The thin-client
/// index"): new ids go to `thin_client_recent`, which moves them to
/// `thin_client_events` once it holds its limit; a retry is recognised in
/// either table, and the first copy of an id stays the one indexed.
@Suite("Thin-client index")
struct ThinClientIndexTests {
    let directory: TemporaryDirectory
    let clock = ManualClock(1_000_000)
    /// Small, so that a few batches fill the recent table several times.
    static let recentLimit = 16

    init() throws {
        directory = try TemporaryDirectory()
    }

    private func makeLog(_ name: String) throws -> EventLog {
        var options = EventLog.Options.testing(clock: clock)
        options.thinClientRecentLimit = Self.recentLimit
        return try EventLog.create(at: directory.path("\(name).db"), replicaID: name, options: options)
    }

    private func pushes(_ count: Int, item: UUID = UUID(), from time: Int64 = 1) -> [ThinClientEvent] {
        (0..<count).map { index in
            let change: ItemEvent =
                index == 0 ? .created(name: "Bolts", quantity: 1) : .quantityChanged(quantity: Int64(index))
            return ThinClientEvent(
                eventID: UUID(), clientReplicaID: "phone", timeMs: time + Int64(index),
                entityID: item.uuidString.lowercased(), payload: change.payload)
        }
    }

    /// Rows of both tables whose id and offset match no event row: 0 when the index is right.
    private func mismatchedRows(_ path: String) throws -> Int64? {
        try RawSQL.int(
            path,
            """
            SELECT count(*) FROM (SELECT event_id, local_offset FROM thin_client_recent
                                  UNION ALL SELECT event_id, local_offset FROM thin_client_events) t
            WHERE NOT EXISTS (SELECT 1 FROM events e WHERE e.local_offset = t.local_offset AND e.event_id = t.event_id)
            """)
    }

    @Test("Ids move to the large table once the recent one holds its limit, each id in one table")
    func recentIDsMoveToTheLargeTable() throws {
        let log = try makeLog("relay")
        var stored: [StoredEvent] = []
        for batch in 0..<10 { stored += try log.acceptThinClientEvents(pushes(7, from: Int64(batch * 10))) }
        let recent = try #require(try RawSQL.int(log.path, "SELECT count(*) FROM thin_client_recent"))
        let settled = try #require(try RawSQL.int(log.path, "SELECT count(*) FROM thin_client_events"))
        #expect(recent < Int64(Self.recentLimit))
        #expect(settled >= Int64(Self.recentLimit))
        #expect(recent + settled == 70)
        #expect(
            try RawSQL.int(
                log.path,
                "SELECT count(*) FROM thin_client_recent r JOIN thin_client_events s ON s.event_id = r.event_id")
                == 0)
        #expect(try mismatchedRows(log.path) == 0)
        #expect(stored.map(\.offset) == Array(1...70))
    }

    @Test("A retry of ids from both tables, one repeated in the batch, is answered with the copies held")
    func retriesAreFoundInBothTables() throws {
        let log = try makeLog("relay")
        var stored: [StoredEvent] = []
        var sent: [ThinClientEvent] = []
        // 50 ids: 48 moved in three passes, 2 left in the recent table.
        for batch in 0..<5 {
            let events = pushes(10, from: Int64(batch * 10))
            sent += events
            stored += try log.acceptThinClientEvents(events)
        }
        try #require(try RawSQL.int(log.path, "SELECT count(*) FROM thin_client_events") ?? 0 > 0)
        try #require(try RawSQL.int(log.path, "SELECT count(*) FROM thin_client_recent") ?? 0 > 0)
        let replay = [sent[0], sent[49], sent[20], sent[0]]
        let answers = try log.acceptThinClientEvents(replay)
        #expect(answers == [stored[0], stored[49], stored[20], stored[0]])
        #expect(try log.eventCount() == 50)
        #expect(try log.thinClientEvents(after: 0, limit: 100).count == 50)
    }

    @Test("A copy of a moved id that arrives through another relay leaves the first copy indexed")
    func secondCopyOfAMovedIDIsNotIndexed() throws {
        let relayA = try makeLog("relay-a")
        let relayB = try makeLog("relay-b")
        let events = pushes(40)
        let first = try relayB.acceptThinClientEvents(events)
        // Relay A takes the first event too, then relay B takes relay A's feed.
        try relayA.acceptThinClientEvents([events[0]])
        try relayB.ingest(try relayA.events(after: 0, limit: 10).map(\.event))
        #expect(try relayB.eventCount() == 41)
        #expect(try relayB.acceptThinClientEvents([events[0]]) == [first[0]])
        #expect(try mismatchedRows(relayB.path) == 0)
        #expect(
            try RawSQL.int(
                relayB.path,
                "SELECT (SELECT count(*) FROM thin_client_recent) + (SELECT count(*) FROM thin_client_events)") == 40)
        #expect(try relayB.checkIntegrity(refold: true).findings.isEmpty)
    }

    @Test("A version-9 file keeps its index in the large table, answers retries from it and takes new ids")
    func versionNineFileIsMigrated() throws {
        let path = directory.path("v9.db")
        let sent = pushes(12)
        let stored: [StoredEvent]
        do {
            let log = try EventLog.create(at: path, replicaID: "relay", options: .testing(clock: clock))
            stored = try log.acceptThinClientEvents(sent)
        }
        // What a version-9 build left: every id in `thin_client_events`, no `thin_client_recent`.
        try RawSQL.execute(
            path,
            """
            INSERT INTO thin_client_events SELECT event_id, local_offset FROM thin_client_recent;
            DROP TABLE thin_client_recent;
            PRAGMA user_version = 9;
            """)
        try #require(try RawSQL.int(path, "SELECT count(*) FROM thin_client_events") == 12)

        let migrated = try EventLog.open(at: path, options: .testing(clock: clock))

        #expect(try RawSQL.int(path, "PRAGMA user_version") == 10)
        #expect(try RawSQL.int(path, "SELECT count(*) FROM thin_client_recent") == 0)
        #expect(try migrated.acceptThinClientEvents([sent[3], sent[11]]) == [stored[3], stored[11]])
        let next = try migrated.acceptThinClientEvents(pushes(2, from: 100))
        #expect(next.map(\.offset) == [13, 14])
        #expect(try RawSQL.int(path, "SELECT count(*) FROM thin_client_recent") == 2)
        #expect(try mismatchedRows(path) == 0)
        #expect(try migrated.thinClientEvents(after: 0, limit: 100).count == 14)
    }
}
