import Foundation
import TestSupport
import Testing

@testable import Replica

/// Appending local events: idempotency keys, batches, validation, unknown types.
@Suite("Local append")
struct LocalAppendTests {
    let directory: TemporaryDirectory
    let clock = ManualClock(1_000)

    init() throws {
        directory = try TemporaryDirectory()
    }

    private func makeLog() throws -> EventLog {
        try EventLog.create(at: directory.path("a.db"), replicaID: "a", options: .testing(clock: clock))
    }

    @Test("An append gets the next seq in the replica's own feed and the clock's time")
    func appendAssignsSeqAndTime() throws {
        let log = try makeLog()
        let first = try log.append(NewEvent(item: "i1", .created(name: "Bolts", quantity: 1)))
        let second = try log.append(NewEvent(item: "i1", .quantityChanged(quantity: 2)))

        #expect(first.event.feed == FeedID(replicaID: "a"))
        #expect([first.event.seq, second.event.seq] == [1, 2])
        #expect([first.event.timeMs, second.event.timeMs] == [1_000, 1_001])
        #expect(try log.cursor() == [FeedID(replicaID: "a"): 2])
    }

    @Test("Repeating an idempotency key returns the first event and appends nothing")
    func idempotencyKeyDeduplicates() throws {
        let log = try makeLog()
        let first = try log.append(NewEvent(item: "i1", .created(name: "Bolts", quantity: 1)), idempotencyKey: "k1")
        clock.advance(by: 100)

        let repeated = try log.append(NewEvent(item: "i1", .created(name: "Bolts", quantity: 1)), idempotencyKey: "k1")

        #expect(repeated.event.eventID == first.event.eventID)
        #expect(repeated.offset == first.offset)
        #expect(repeated == first)
        #expect(try log.eventCount() == 1)
    }

    @Test("Different idempotency keys append different events")
    func differentKeysAppend() throws {
        let log = try makeLog()
        let first = try log.append(NewEvent(item: "i1", .created(name: "Bolts", quantity: 1)), idempotencyKey: "k1")
        let second = try log.append(NewEvent(item: "i1", .created(name: "Bolts", quantity: 1)), idempotencyKey: "k2")

        #expect(first.event.eventID != second.event.eventID)
        #expect(try log.eventCount() == 2)
    }

    @Test("A batched append is one transaction with contiguous seqs")
    func batchIsContiguous() throws {
        let log = try makeLog()
        try log.append(NewEvent(item: "i0", .created(name: "First", quantity: 1)))
        let batch = (1...5).map { NewEvent(item: "i\($0)", .created(name: "Item \($0)", quantity: Int64($0))) }

        let stored = try log.append(batch)

        #expect(stored.map(\.event.seq) == [2, 3, 4, 5, 6])
        #expect(stored.map(\.offset) == [2, 3, 4, 5, 6])
        #expect(zip(stored, stored.dropFirst()).allSatisfy { $0.event.orderKey < $1.event.orderKey })
        #expect(try log.projections(Item.self).count == 6)
    }

    @Test("A batch with one invalid event appends nothing")
    func batchWithInvalidEventAppendsNothing() throws {
        let log = try makeLog()
        let batch = [
            NewEvent(item: "i1", .created(name: "Bolts", quantity: 1)),
            NewEvent(entityType: Item.entityType, entityID: "i2", payload: #"{"type":"Exploded"}"#),
        ]

        #expect(throws: EventLogError.self) { try log.append(batch) }
        #expect(try log.eventCount() == 0)
        #expect(try log.cursor() == VectorCursor())
        #expect(try log.projections(Item.self).isEmpty)
    }

    @Test(
        "An item payload the domain rejects throws invalidEvent and appends nothing",
        arguments: [
            #"{"type":"Exploded"}"#,
            #"{"type":"Created","name":"Bolts"}"#,
            #"{"type":"QuantityChanged","quantity":"many"}"#,
            #"{"type":"NoteChanged"}"#,
            #"{"name":"Bolts"}"#,
            "not json",
            "[1,2]",
        ])
    func invalidItemPayloadIsRefused(payload: String) throws {
        let log = try makeLog()
        try log.append(NewEvent(item: "i1", .created(name: "Bolts", quantity: 1)))

        let error = try #require(throws: EventLogError.self) {
            try log.append(NewEvent(entityType: Item.entityType, entityID: "i1", payload: payload))
        }

        guard case .invalidEvent(let reason) = error else {
            Issue.record("expected invalidEvent, got \(error)")
            return
        }
        #expect(!reason.isEmpty)
        #expect(try log.eventCount() == 1)
        #expect(try log.cursor() == [FeedID(replicaID: "a"): 1])
    }

    @Test("An empty entity id is refused")
    func emptyEntityIDIsRefused() throws {
        let log = try makeLog()
        #expect(throws: EventLogError.self) {
            try log.append(NewEvent(item: "", .created(name: "Bolts", quantity: 1)))
        }
        #expect(try log.eventCount() == 0)
    }

    @Test("Payloads are stored in canonical form")
    func payloadIsCanonicalised() throws {
        let log = try makeLog()
        let stored = try log.append(
            NewEvent(
                entityType: Item.entityType, entityID: "i1", payload: #"{ "quantity" : 3, "type" : "QuantityChanged" }"#
            ))
        #expect(stored.event.payload == #"{"quantity":3,"type":"QuantityChanged"}"#)
    }

    @Test("Events of an unknown entity type are stored but not folded")
    func unknownEntityTypeIsStoredOnly() throws {
        let log = try makeLog()
        try log.append(NewEvent(item: "i1", .created(name: "Bolts", quantity: 1)))
        let hashBefore = try log.stateHash()

        let stored = try log.append(
            NewEvent(entityType: "pallet", entityID: "p1", payload: #"{"type":"Loaded","tons":2}"#))

        #expect(stored.event.seq == 2)
        #expect(try log.eventCount() == 2)
        #expect(try log.events(entityType: "pallet", entityID: "p1").map(\.event) == [stored.event])
        #expect(try log.projections(Item.self).map(\.id) == ["i1"])
        #expect(try log.stateHash() == hashBefore)
    }

    @Test("Separate scopes are separate feeds")
    func scopesAreSeparateFeeds() throws {
        let log = try makeLog()
        try log.append(NewEvent(item: "i1", .created(name: "Bolts", quantity: 1)))
        let shared = try log.append(NewEvent(item: "i2", .created(name: "Nuts", quantity: 1), scope: "shared"))

        #expect(shared.event.feed == FeedID(replicaID: "a", scope: "shared"))
        #expect(shared.event.seq == 1)
        #expect(try log.cursor() == [FeedID(replicaID: "a"): 1, FeedID(replicaID: "a", scope: "shared"): 1])
    }

    @Test("The state hash changes when a projection changes")
    func stateHashTracksProjections() throws {
        let log = try makeLog()
        let empty = try log.stateHash()
        try log.append(NewEvent(item: "i1", .created(name: "Bolts", quantity: 1)))
        let created = try log.stateHash()
        try log.append(NewEvent(item: "i1", .quantityChanged(quantity: 2)))

        #expect(empty == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(created != empty)
        #expect(try log.stateHash() != created)
    }
}

/// Arrival times (a relay's server times) follow local offsets.
@Suite("Arrival times")
struct ArrivalTimeTests {
    let directory: TemporaryDirectory
    let clock = ManualClock(50_000)

    init() throws {
        directory = try TemporaryDirectory()
    }

    @Test("A clock set back does not take arrival times back, for appends, ingests and thin-client pushes alike")
    func arrivalTimesNeverGoBack() throws {
        let log = try EventLog.create(at: directory.path("a.db"), replicaID: "a", options: .testing(clock: clock))
        let first = try log.append(NewEvent(item: "i1", .created(name: "Bolts", quantity: 1)))
        clock.set(20_000)
        let appended = try log.append(NewEvent(item: "i1", .quantityChanged(quantity: 2)))
        let source = try EventLog.create(at: directory.path("b.db"), replicaID: "b", options: .testing(clock: clock))
        let remote = try source.append(NewEvent(item: "i2", .created(name: "Nuts", quantity: 3)))
        let ingested = try log.ingest([remote.event]).stored
        let pushed = try log.acceptThinClientEvents([
            ThinClientEvent(
                eventID: UUID(), clientReplicaID: "phone", timeMs: 10_000, entityID: UUID().uuidString.lowercased(),
                payload: ItemEvent.created(name: "Washers", quantity: 5).payload)
        ])
        #expect(first.arrivalTimeMs == 50_000)
        #expect(appended.arrivalTimeMs == 50_000)
        #expect(ingested.map(\.arrivalTimeMs) == [50_000])
        #expect(pushed.map(\.arrivalTimeMs) == [50_000])
        clock.set(60_000)
        #expect(try log.append(NewEvent(item: "i1", .quantityChanged(quantity: 4))).arrivalTimeMs == 60_000)
        let offsets = try log.events(after: 0, limit: 10).map(\.offset)
        #expect(offsets == [1, 2, 3, 4, 5])
    }
}
