import Foundation
import TestSupport
import Testing

@testable import Replica

/// Opening and creating database files: refusals and reopening.
@Suite("Storage")
struct StorageTests {
    let directory: TemporaryDirectory
    let clock = ManualClock(1_000)

    init() throws {
        directory = try TemporaryDirectory()
    }

    private func bytes(of path: String) throws -> Data {
        try Data(contentsOf: URL(fileURLWithPath: path))
    }

    @Test("Opening a file of random bytes reports it as corrupt")
    func randomBytesAreCorrupt() throws {
        let path = directory.path("random.db")
        var rng = SplitMix64(seed: 99)
        let noise = Data((0..<8192).map { _ in UInt8.random(in: 0...255, using: &rng) })
        try noise.write(to: URL(fileURLWithPath: path))

        let error = try #require(throws: EventLogError.self) { try EventLog.open(at: path) }

        guard case .corrupt(let reportedPath, _) = error else {
            Issue.record("expected corrupt, got \(error)")
            return
        }
        #expect(reportedPath == path)
        #expect(try bytes(of: path) == noise)
    }

    @Test("Opening another application's SQLite file is refused and leaves it unchanged")
    func foreignSQLiteIsRefused() throws {
        let path = directory.path("foreign.db")
        do {
            let foreign = try SQLiteConnection(path: path, create: true)
            try foreign.execute("CREATE TABLE recipes (name TEXT); INSERT INTO recipes VALUES ('bread');")
        }
        let before = try bytes(of: path)

        let error = try #require(throws: EventLogError.self) { try EventLog.open(at: path) }

        guard case .notAPeerSyncDatabase(let reportedPath, let reason) = error else {
            Issue.record("expected notAPeerSyncDatabase, got \(error)")
            return
        }
        #expect(reportedPath == path)
        #expect(reason.contains("another application"))
        #expect(try bytes(of: path) == before)
        #expect(!FileManager.default.fileExists(atPath: path + "-wal"))
    }

    @Test("Opening a foreign file made with the sqlite3 tool is refused and leaves it unchanged")
    func foreignFileFromSQLiteToolIsRefused() throws {
        let path = directory.path("tool.db")
        let tool = Process()
        tool.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
        tool.arguments = [path, "CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('hello');"]
        try tool.run()
        tool.waitUntilExit()
        try #require(tool.terminationStatus == 0)
        let before = try bytes(of: path)

        #expect(throws: EventLogError.self) { try EventLog.open(at: path) }
        #expect(try bytes(of: path) == before)
    }

    @Test("Opening a database of a newer schema is refused")
    func newerSchemaIsRefused() throws {
        let path = directory.path("newer.db")
        do {
            _ = try EventLog.create(at: path, replicaID: "a", options: .testing(clock: clock))
        }
        do {
            let connection = try SQLiteConnection(path: path, create: false)
            try connection.execute("PRAGMA user_version = \(Schema.currentVersion + 1)")
        }

        let error = try #require(throws: EventLogError.self) { try EventLog.open(at: path) }

        guard case .newerSchema(_, let found, let supported) = error else {
            Issue.record("expected newerSchema, got \(error)")
            return
        }
        #expect(found == Schema.currentVersion + 1)
        #expect(supported == Schema.currentVersion)
    }

    @Test("Creating a database where a file exists is refused")
    func createOnExistingPathIsRefused() throws {
        let path = directory.path("a.db")
        _ = try EventLog.create(at: path, replicaID: "a", options: .testing(clock: clock))

        let error = try #require(throws: EventLogError.self) {
            try EventLog.create(at: path, replicaID: "b", options: .testing(clock: clock))
        }

        guard case .alreadyExists(let reportedPath) = error else {
            Issue.record("expected alreadyExists, got \(error)")
            return
        }
        #expect(reportedPath == path)
        #expect(try EventLog.open(at: path).replicaID == "a")
    }

    @Test("Opening a missing file reports notFound and creates nothing")
    func openOnMissingPathIsNotFound() throws {
        let path = directory.path("missing.db")

        let error = try #require(throws: EventLogError.self) { try EventLog.open(at: path) }

        guard case .notFound(let reportedPath) = error else {
            Issue.record("expected notFound, got \(error)")
            return
        }
        #expect(reportedPath == path)
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test("An empty replica id is refused")
    func emptyReplicaIDIsRefused() throws {
        let path = directory.path("a.db")
        #expect(throws: EventLogError.self) { try EventLog.create(at: path, replicaID: "") }
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test("A replica id the protocol keeps for itself is refused, and so are a peer's events in such a feed")
    func reservedReplicaIDIsRefused() throws {
        let path = directory.path("a.db")
        #expect(throws: EventLogError.self) { try EventLog.create(at: path, replicaID: "peersync/capability") }
        #expect(!FileManager.default.fileExists(atPath: path))
        let log = try EventLog.create(at: path, replicaID: "a", options: .testing(clock: clock))
        let forged = Fixtures.itemEvent("peersync/capability", seq: 1, time: 1, item: "i1", .deleted)
        let report = try log.ingest([forged])
        #expect(report.stored.isEmpty)
        #expect(report.invalid.map(\.reason) == ["replica_id peersync/capability is reserved for the protocol"])
        #expect(try log.eventCount() == 0)
    }

    @Test("Reopening keeps the replica id, cursor, events and state hash")
    func reopenKeepsEverything() throws {
        let path = directory.path("a.db")
        var expectedCursor = VectorCursor()
        var expectedEvents: [StoredEvent] = []
        var expectedHash = ""
        do {
            let log = try EventLog.create(at: path, replicaID: "tablet-7", options: .testing(clock: clock))
            try log.append(NewEvent(item: "i1", .created(name: "Bolts", quantity: 5)))
            try log.ingest([
                Fixtures.itemEvent("peer", seq: 1, time: 900, item: "i2", .created(name: "Nuts", quantity: 2))
            ])
            try log.undo(entityType: Item.entityType, entityID: "i1")
            expectedCursor = try log.cursor()
            expectedEvents = try Fixtures.allEvents(log)
            expectedHash = try log.stateHash()
        }

        let reopened = try EventLog.open(at: path, options: .testing(clock: clock))

        #expect(reopened.replicaID == "tablet-7")
        #expect(try reopened.cursor() == expectedCursor)
        #expect(try Fixtures.allEvents(reopened) == expectedEvents)
        #expect(try reopened.stateHash() == expectedHash)
        #expect(expectedEvents.count == 3)
    }

    @Test("A reopened log continues its feed at the next seq")
    func reopenedLogContinuesFeed() throws {
        let path = directory.path("a.db")
        do {
            let log = try EventLog.create(at: path, replicaID: "a", options: .testing(clock: clock))
            try log.append(NewEvent(item: "i1", .created(name: "Bolts", quantity: 5)))
        }

        let reopened = try EventLog.open(at: path, options: .testing(clock: clock))
        let next = try reopened.append(NewEvent(item: "i1", .quantityChanged(quantity: 6)))

        #expect(next.event.seq == 2)
        #expect(next.offset == 2)
    }

    @Test("The items view is readable with plain SQL")
    func itemsViewIsReadable() throws {
        let path = directory.path("a.db")
        let log = try EventLog.create(at: path, replicaID: "a", options: .testing(clock: clock))
        try log.append(NewEvent(item: "i1", .created(name: "Bolts", quantity: 5)))

        let reader = try SQLiteConnection(path: path, create: false)
        #expect(try reader.scalarInt("SELECT quantity FROM items WHERE id = 'i1'") == 5)
        #expect(try reader.scalarInt("SELECT count(*) FROM event_log") == 1)
    }
}
