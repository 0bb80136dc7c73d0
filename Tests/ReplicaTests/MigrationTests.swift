import Foundation
import TestSupport
import Testing

@testable import Replica

/// Opening a database an older build wrote: the migrations in `Schema`
/// run once, in one transaction, and leave the same events and states
/// in the current shape (docs/storage.md).
///
/// A version-1 file is built by hand: version 1's schema (`Schema.migrations[0]`)
/// filled with the rows of a log this build wrote, which version 1 would
/// have held alike (its states are the same canonical JSON).
@Suite("Schema migrations")
struct MigrationTests {
    let directory: TemporaryDirectory
    let clock = ManualClock(2_000_000)

    init() throws {
        directory = try TemporaryDirectory()
    }

    /// Offsets in the version-1 file are the source's times this, so that
    /// they have gaps (as rolled-back inserts can leave).
    static let offsetStride: Int64 = 3

    @Test("A version-1 database is migrated with every chain, head and projection in place")
    func versionOneIsMigrated() throws {
        let (source, path) = try makeVersionOneCopy()
        // The file is what version 1 left.
        #expect(try RawSQL.int(path, "PRAGMA user_version") == 1)
        #expect(try RawSQL.int(path, "SELECT count(*) FROM sqlite_master WHERE name = 'events_by_entity'") == 1)
        #expect(
            try RawSQL.int(path, "SELECT count(*) FROM pragma_table_info('events') WHERE name = 'entity_prev'") == 0)
        // The chains interleave, so that a chain is not just "the offset before".
        let interleaved = try RawSQL.int(
            path,
            """
            SELECT count(*) FROM events e
            WHERE (SELECT max(p.local_offset) FROM events p WHERE p.entity = e.entity AND p.local_offset < e.local_offset)
                  < e.local_offset - \(Self.offsetStride)
            """)
        #expect((interleaved ?? 0) > 10)

        let migrated = try EventLog.open(at: path, options: options())

        #expect(Schema.currentVersion == 10)
        // Version 6 adds chain links: a migrated feed's head link is computed from its events, as the writer's was.
        #expect(try RawSQL.int(path, "SELECT count(*) FROM feeds WHERE head_link IS NOT NULL") == 0)
        #expect(try migrated.signedHeads() == (try source.signedHeads()))
        #expect(try migrated.signedHeads().allSatisfy { $0.signature == nil && $0.link != FeedChain.genesis })
        // Version 5 adds block rows; the migrated events stay rows, and `event_log` shows them all.
        #expect(try RawSQL.int(path, "SELECT count(*) FROM event_blocks") == 0)
        #expect(
            try RawSQL.int(path, "SELECT count(*) FROM event_log")
                == (try RawSQL.int(path, "SELECT count(*) FROM events")))
        // Version 10 adds the small table new thin-client ids go to; the migrated ones stay where they were.
        #expect(try RawSQL.int(path, "SELECT count(*) FROM thin_client_recent") == 0)
        // Version 4 adds the session holder of each entity; nothing was claimed before it.
        #expect(try RawSQL.int(path, "SELECT count(*) FROM entities WHERE holder IS NOT NULL") == 0)
        // Version 3 indexes the thin-client events by id, the first copy of each (docs/storage.md).
        #expect(try RawSQL.int(path, "SELECT count(*) FROM thin_client_events") == 2)
        #expect(
            try RawSQL.int(
                path,
                """
                SELECT count(*) FROM thin_client_events t JOIN events e ON e.local_offset = t.local_offset
                JOIN feeds f ON f.id = e.feed WHERE f.replica_id = 'phone@relay-a'
                """) == 2)
        #expect(try RawSQL.int(path, "PRAGMA user_version") == Int64(Schema.currentVersion))
        #expect(try RawSQL.int(path, "PRAGMA application_id") == Schema.applicationID)
        #expect(try RawSQL.int(path, "SELECT count(*) FROM sqlite_master WHERE name = 'events_by_entity'") == 0)
        #expect(try RawSQL.chainProblems(path, checkHeads: true) == [])
        #expect(
            try RawSQL.int(path, "SELECT count(*) FROM events WHERE entity_prev IS NULL")
                == (try RawSQL.int(path, "SELECT count(DISTINCT entity) FROM events")))
        #expect(try RawSQL.int(path, "SELECT last_offset FROM entities WHERE entity_id = 'ghost'") == nil)
        let newest = try #require(try RawSQL.int(path, "SELECT max(local_offset) FROM events"))
        #expect(newest == (try source.lastOffset()) * Self.offsetStride)
        #expect(try RawSQL.projectedOffset(path) == newest)

        #expect(migrated.replicaID == "source")
        #expect(try migrated.projections(Item.self) == (try source.projections(Item.self)))
        #expect(try migrated.stateHash() == (try source.stateHash()))
        #expect(!migrated.hasPendingProjections)
        #expect(try migrated.eventCount() == (try source.eventCount()))
        #expect(try migrated.cursor() == (try source.cursor()))
        #expect(try migrated.poisonEventCount() == 1)
        #expect(try migrated.forkCount() == 1)
        #expect(try migrated.projection(Item.self, id: "ghost") == nil)
        #expect(try RawSQL.items(path) == (try source.projections(Item.self)))
        for (type, id) in try RawSQL.entities(source.path) {
            let held = try migrated.events(entityType: type, entityID: id).map(\.event.eventID)
            let expected = try source.events(entityType: type, entityID: id).map(\.event.eventID)
            #expect(held == expected, "\(type) \(id)")
            #expect(!held.isEmpty, "\(type) \(id)")
        }
        #expect(try migrated.events(entityType: Item.entityType, entityID: "ghost").isEmpty)

        // Opened again: nothing left to migrate.
        let reopened = try EventLog.open(at: path, options: options())
        #expect(try RawSQL.int(path, "PRAGMA user_version") == Int64(Schema.currentVersion))
        #expect(try reopened.stateHash() == (try source.stateHash()))
    }

    @Test("A migrated log folds new local, late, undo and large-batch events on top of the migrated rows")
    func migratedLogFoldsNewEvents() throws {
        let (source, path) = try makeVersionOneCopy()
        let reference = try EventLog.create(
            at: directory.path("reference.db"), replicaID: "reference", options: options(.immediate))
        // One event a batch, in arrival order (so each write holds at most one unfolded chain head).
        for stored in try Fixtures.allEvents(source) { try reference.ingest([stored.event]) }
        try #require(try reference.stateHash() == (try source.stateHash()))
        let migrated = try EventLog.open(at: path, options: options())

        // A local append chains to the migrated head.
        let headBefore = try RawSQL.int(path, "SELECT last_offset FROM entities WHERE entity_id = 'i2'")
        let appended = try migrated.append(NewEvent(item: "i2", .quantityChanged(quantity: 99)))
        #expect(appended.offset == (try source.lastOffset()) * Self.offsetStride + 1)
        #expect(
            try RawSQL.int(path, "SELECT entity_prev FROM events WHERE local_offset = \(appended.offset)") == headBefore
        )
        #expect(try migrated.projection(Item.self, id: "i2")?.quantity == 99)
        try reference.ingest([appended.event])
        try expectSameState(migrated, reference, "after a local append")

        // The migrated idempotency key still answers with its event.
        let keyed = try migrated.append(NewEvent(item: "i2", .created(name: "Nuts", quantity: 3)), idempotencyKey: "i2")
        let original = try source.append(
            NewEvent(item: "i2", .created(name: "Nuts", quantity: 3)), idempotencyKey: "i2")
        #expect(keyed.event.eventID == original.event.eventID)
        #expect(keyed.offset == original.offset * Self.offsetStride)

        // A late event and an undo of a migrated event: refolds through the migrated chain.
        let migratedTarget = try #require(
            try source.events(entityType: Item.entityType, entityID: "i3").first { $0.event.feed.replicaID == "r1" })
        let refolding = [
            Fixtures.itemEvent("r9", seq: 1, time: 1, item: "i3", .noteChanged(note: "earliest")),
            Fixtures.rawEvent(
                "r9", seq: 2, time: 1_900_000, entity: "i3",
                payload: Fixtures.undonePayload(migratedTarget.event.eventID)),
        ]
        try migrated.ingest(refolding)
        try reference.ingest(refolding)
        try expectSameState(migrated, reference, "after a late event and an undo")

        // A local undo walks the migrated chain for its target.
        let undo = try migrated.undo(entityType: Item.entityType, entityID: "i5")
        let expectedTarget = Fold.undoTarget(
            inCanonicalOrder: try reference.events(entityType: Item.entityType, entityID: "i5").map(\.event))
        #expect(UndoneEvent.parse(undo.event.payload)?.eventID == expectedTarget?.eventID)
        try reference.ingest([undo.event])
        try expectSameState(migrated, reference, "after a local undo")

        // The entity version 1 held without events starts its chain.
        let ghost = try migrated.append(NewEvent(item: "ghost", .created(name: "Ghost", quantity: 1)))
        #expect(
            try RawSQL.int(path, "SELECT entity_prev IS NULL FROM events WHERE local_offset = \(ghost.offset)") == 1)
        try reference.ingest([ghost.event])
        try expectSameState(migrated, reference, "after the first event of an entity without events")

        // A large batch over migrated and new items leaves its rows pending.
        let large: [Event] = (1...300).map { (seq: Int) -> Event in
            let edit: ItemEvent = seq % 3 == 0 ? .renamed(name: "Name \(seq)") : .quantityChanged(quantity: Int64(seq))
            return Fixtures.itemEvent(
                "r7", seq: UInt64(seq), time: 1_000_000 + Int64(seq) * 7, item: "i\(seq % 12)", edit)
        }
        try migrated.ingest(large)
        try reference.ingest(large)
        #expect(migrated.hasPendingProjections)
        try expectSameState(migrated, reference, "with a large batch pending")
        try migrated.writePendingProjections()
        #expect(try RawSQL.projectedOffset(path) == (try migrated.lastOffset()))
        #expect(try RawSQL.entityStates(path) == (try RawSQL.entityStates(reference.path)))
        #expect(try RawSQL.chainProblems(path, checkHeads: true) == [])
        for index in 0..<12 {
            let held = try migrated.events(entityType: Item.entityType, entityID: "i\(index)").map(\.event.eventID)
            let expected = try reference.events(entityType: Item.entityType, entityID: "i\(index)")
                .map(\.event.eventID)
            #expect(held == expected, "i\(index)")
        }
    }

    @Test("An empty version-1 database is migrated and takes events")
    func emptyVersionOneIsMigrated() throws {
        let path = directory.path("empty-v1.db")
        try VersionOneFile.write(at: path, replicaID: "empty", copying: nil)

        let migrated = try EventLog.open(at: path, options: options())

        #expect(try RawSQL.int(path, "PRAGMA user_version") == Int64(Schema.currentVersion))
        #expect(try RawSQL.projectedOffset(path) == 0)
        #expect(migrated.replicaID == "empty")
        let fresh = try EventLog.create(at: directory.path("fresh.db"), replicaID: "fresh", options: options())
        #expect(try migrated.stateHash() == (try fresh.stateHash()))
        let created = try migrated.append(NewEvent(item: "i1", .created(name: "Bolts", quantity: 5)))
        let renamed = try migrated.append(NewEvent(item: "i1", .renamed(name: "Nuts")))
        #expect(try migrated.projection(Item.self, id: "i1")?.name == "Nuts")
        #expect(
            try migrated.events(entityType: Item.entityType, entityID: "i1").map(\.event.eventID) == [
                created.event.eventID, renamed.event.eventID,
            ])
        #expect(try RawSQL.projectedOffset(path) == 2)
        #expect(try RawSQL.chainProblems(path, checkHeads: true) == [])
    }

    @Test("A migration that fails leaves the version-1 file as it was")
    func failedMigrationLeavesTheFileAlone() throws {
        let source = try makeSource()
        let path = directory.path("v1.db")
        try VersionOneFile.write(at: path, replicaID: "source", copying: source.path, offsetStride: Self.offsetStride)
        // Version 2 inserts this key; a stray one makes its step fail half-way.
        try RawSQL.execute(path, "INSERT INTO meta (key, value) VALUES ('projected_offset', '0')")

        let error = try #require(throws: EventLogError.self) { try EventLog.open(at: path, options: options()) }
        #expect("\(error)".contains("UNIQUE constraint failed: meta.key"), "\(error)")

        #expect(try RawSQL.int(path, "PRAGMA user_version") == 1)
        #expect(try RawSQL.int(path, "SELECT count(*) FROM sqlite_master WHERE name = 'events_by_entity'") == 1)
        #expect(
            try RawSQL.int(path, "SELECT count(*) FROM pragma_table_info('events') WHERE name = 'entity_prev'") == 0)
        #expect(
            try RawSQL.int(path, "SELECT count(*) FROM pragma_table_info('entities') WHERE name = 'last_offset'") == 0)

        // Without the stray row the same file migrates.
        try RawSQL.execute(path, "DELETE FROM meta WHERE key = 'projected_offset'")
        let migrated = try EventLog.open(at: path, options: options())
        #expect(try RawSQL.int(path, "PRAGMA user_version") == Int64(Schema.currentVersion))
        #expect(try migrated.stateHash() == (try source.stateHash()))
    }

    // MARK: - Helpers

    private func options(_ writes: EventLog.Options.ProjectionWrites = .init()) -> EventLog.Options {
        var options = EventLog.Options.testing(clock: clock)
        options.projectionWrites = writes
        return options
    }

    /// A log of this build holding a little of everything: local and remote
    /// item events on interleaved items, a late event, undos, a poison event,
    /// events of a type no domain folds, an idempotency key and a fork.
    /// A current log with some history, and a version-1 file at `v1.db`
    /// holding the same rows (offsets spread out) plus an entity without events.
    private func makeVersionOneCopy() throws -> (source: EventLog, path: String) {
        let source = try makeSource()
        let path = directory.path("v1.db")
        try VersionOneFile.write(at: path, replicaID: "source", copying: source.path, offsetStride: Self.offsetStride)
        try VersionOneFile.addEntityWithoutEvents(at: path, type: Item.entityType, id: "ghost")
        return (source, path)
    }

    private func makeSource() throws -> EventLog {
        let source = try EventLog.create(
            at: directory.path("source.db"), replicaID: "source", options: options(.immediate))
        try source.append(NewEvent(item: "i1", .created(name: "Bolts", quantity: 5)))
        try source.append(NewEvent(item: "i2", .created(name: "Nuts", quantity: 3)), idempotencyKey: "i2")
        var rng = SplitMix64(seed: 5)
        var remote: [Event] = []
        for (index, origin) in ["r1", "r2"].enumerated() {
            for seq in 1...40 {
                let item = "i\(Int.random(in: 0..<8, using: &rng))"
                let event: ItemEvent =
                    seq % 4 == 0 ? .renamed(name: "\(origin)-\(seq)") : .quantityChanged(quantity: Int64(seq))
                remote.append(
                    Fixtures.itemEvent(
                        origin, seq: UInt64(seq), time: 1_000_000 + Int64(seq) * 10 + Int64(index), item: item, event))
            }
        }
        try source.ingest(remote)
        try source.ingest([Fixtures.itemEvent("r3", seq: 1, time: 5, item: "i3", .noteChanged(note: "late"))])
        try source.ingest([
            Fixtures.rawEvent(
                "r3", seq: 2, time: 1_000_100, entity: "i4", payload: #"{"type":"QuantityChanged","quantity":"many"}"#)
        ])
        // One entity of an unfolded type per batch: each write holds one such chain head.
        for (seq, note) in ["n1", "n2", "n1"].enumerated() {
            try source.ingest([
                Fixtures.rawEvent(
                    "r3", seq: UInt64(seq + 3), time: 1_000_200 + Int64(seq), type: "note", entity: note,
                    payload: #"{"text":"hello","type":"Written"}"#)
            ])
        }
        try source.undo(entityType: Item.entityType, entityID: "i1")
        let undoTarget = try #require(remote.first { $0.entityID == "i6" })
        try source.ingest([
            Fixtures.rawEvent(
                "r4", seq: 1, time: 1_500_000, entity: "i6", payload: Fixtures.undonePayload(undoTarget.eventID))
        ])
        try source.append(NewEvent(item: "i7", .deleted))
        // A thin client's feeds on two relays, one event in both.
        let pushed = Fixtures.itemEvent("phone@relay-a", seq: 1, time: 1_600_000, item: "i2", .renamed(name: "Washers"))
        try source.ingest([
            pushed,
            Fixtures.itemEvent("phone@relay-a", seq: 2, time: 1_600_001, item: "i2", .quantityChanged(quantity: 9)),
        ])
        var copy = pushed
        copy.feed = FeedID(replicaID: "phone@relay-b")
        try source.ingest([copy])
        // A fork: another event at a held slot is quarantined.
        try source.ingest([Fixtures.itemEvent("r1", seq: 1, time: 1, item: "i1", .deleted)])
        #expect(try source.forkCount() == 1)
        #expect(try source.poisonEventCount() == 1)
        #expect(!source.hasPendingProjections)
        return source
    }

}

/// Builds a database as a version-1 build wrote it: version 1's schema
/// (with the index on `events (entity)`, without `entity_prev`,
/// `last_offset` or `projected_offset`), `user_version` 1.
private enum VersionOneFile {
    /// Writes the file at `path`, with the feeds, entities, events, poison,
    /// idempotency keys and quarantine of `source` (a file of this build,
    /// whose rows are all written) when given; event offsets are multiplied
    /// by `offsetStride`.
    static func write(at path: String, replicaID: String, copying source: String?, offsetStride: Int64 = 1) throws {
        let db = try SQLiteConnection(path: path, create: true)
        try db.execute("PRAGMA journal_mode = WAL")
        if let source {
            try db.cached("ATTACH DATABASE ? AS src").run([.text(source)])
        }
        try db.execute("BEGIN")
        try db.execute(Schema.migrations[0])
        try db.execute("PRAGMA application_id = \(Schema.applicationID)")
        try db.execute("PRAGMA user_version = 1")
        guard source != nil else {
            try db.cached("INSERT INTO meta (key, value) VALUES ('replica_id', ?), ('clock_ms', '0')")
                .run([.text(replicaID)])
            db.finishStatements()
            try db.execute("COMMIT")
            return
        }
        try db.execute(
            """
            INSERT INTO meta (key, value) SELECT key, value FROM src.meta WHERE key IN ('replica_id', 'clock_ms');
            INSERT INTO feeds (id, replica_id, scope, head_seq) SELECT id, replica_id, scope, head_seq FROM src.feeds;
            INSERT INTO entities (id, entity_type, entity_id, state, last_time_ms, last_seq, last_event_id)
                SELECT id, entity_type, entity_id, state, last_time_ms, last_seq, last_event_id FROM src.entities;
            INSERT INTO events (local_offset, feed, seq, event_id, time_ms, entity, payload, arrival_ms)
                SELECT local_offset * \(offsetStride), feed, seq, event_id, time_ms, entity, payload, arrival_ms
                FROM src.events ORDER BY local_offset;
            INSERT INTO quarantine
                (id, reason, replica_id, scope, seq, event_id, held_event_id, event_json, detected_ms)
                SELECT id, reason, replica_id, scope, seq, event_id, held_event_id, event_json, detected_ms
                FROM src.quarantine;
            INSERT INTO poison (local_offset) SELECT local_offset * \(offsetStride) FROM src.poison;
            INSERT INTO idempotency_keys (key, local_offset)
                SELECT key, local_offset * \(offsetStride) FROM src.idempotency_keys;
            """)
        let copiedReplicaID = try db.cached("SELECT value FROM meta WHERE key = 'replica_id'")
        guard try copiedReplicaID.step(), copiedReplicaID.text(0) == replicaID else {
            throw EventLogError.invalidEvent("the source is not replica \(replicaID)")
        }
        db.finishStatements()
        try db.execute("COMMIT")
        try db.execute("DETACH DATABASE src")
    }

    /// An entity row without events, with no state: what an insert whose
    /// event then failed validation could leave in version 1.
    static func addEntityWithoutEvents(at path: String, type: String, id: String) throws {
        let db = try SQLiteConnection(path: path, create: false)
        try db.cached("INSERT INTO entities (entity_type, entity_id) VALUES (?, ?)").run([.text(type), .text(id)])
    }
}
