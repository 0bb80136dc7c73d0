import Foundation
import TestSupport
import Testing

@testable import Replica

/// Undo is an append of `Undone {event_id}` that the fold skips.
@Suite("Undo")
struct UndoTests {
    let directory: TemporaryDirectory
    let clock = ManualClock(1_000)

    init() throws {
        directory = try TemporaryDirectory()
    }

    private func makeLog(_ name: String = "a", undoLimit: Int = 10) throws -> EventLog {
        try EventLog.create(
            at: directory.path("\(name).db"), replicaID: name, options: .testing(clock: clock, undoLimit: undoLimit))
    }

    /// Appends Created with quantity 0, then QuantityChanged to each of `quantities`.
    private func itemWithQuantities(_ log: EventLog, _ quantities: [Int64]) throws {
        try log.append(NewEvent(item: "i1", .created(name: "Bolts", quantity: 0)))
        for quantity in quantities {
            clock.advance(by: 10)
            try log.append(NewEvent(item: "i1", .quantityChanged(quantity: quantity)))
        }
    }

    @discardableResult
    private func undoItem(_ log: EventLog) throws -> StoredEvent {
        clock.advance(by: 10)
        return try log.undo(entityType: Item.entityType, entityID: "i1")
    }

    @Test("Undo cancels the latest event")
    func undoCancelsLatestEvent() throws {
        let log = try makeLog()
        try itemWithQuantities(log, [5, 8])

        let undo = try undoItem(log)

        #expect(try log.projection(Item.self, id: "i1")?.quantity == 5)
        let latest = try #require(try log.events(entityType: Item.entityType, entityID: "i1").dropLast().last)
        #expect(undo.event.payload == Fixtures.undonePayload(latest.event.eventID))
        #expect(try log.eventCount() == 4)
    }

    @Test("An undo with an idempotency key a retry already used returns the first undo and cancels nothing more")
    func undoIdempotencyKey() throws {
        let log = try makeLog()
        try itemWithQuantities(log, [5, 8])

        let first = try log.undo(entityType: Item.entityType, entityID: "i1", idempotencyKey: "tap-1")
        clock.advance(by: 10)
        let retry = try log.undo(entityType: Item.entityType, entityID: "i1", idempotencyKey: "tap-1")

        #expect(retry == first)
        #expect(try log.eventCount() == 4)
        #expect(try log.projection(Item.self, id: "i1")?.quantity == 5)
        // A new key is a new undo.
        try log.undo(entityType: Item.entityType, entityID: "i1", idempotencyKey: "tap-2")
        #expect(try log.projection(Item.self, id: "i1")?.quantity == 0)
    }

    @Test("Undoing a delete restores the item")
    func undoOfDeleteRestoresItem() throws {
        let log = try makeLog()
        try itemWithQuantities(log, [5])
        clock.advance(by: 10)
        try log.append(NewEvent(item: "i1", .deleted))
        #expect(try log.projection(Item.self, id: "i1")?.deleted == true)

        try undoItem(log)

        let item = try #require(try log.projection(Item.self, id: "i1"))
        #expect(!item.deleted)
        #expect(item.quantity == 5)
    }

    @Test("Undoing twice walks back two events")
    func undoTwiceWalksBackTwoEvents() throws {
        let log = try makeLog()
        try itemWithQuantities(log, [5, 8, 13])

        try undoItem(log)
        try undoItem(log)

        #expect(try log.projection(Item.self, id: "i1")?.quantity == 5)
    }

    @Test("Undo refuses past the limit of consecutive undos and appends nothing")
    func undoLimitIsEnforced() throws {
        let log = try makeLog(undoLimit: 3)
        try itemWithQuantities(log, [1, 2, 3, 4, 5])
        for _ in 0..<3 { try undoItem(log) }
        let countBefore = try log.eventCount()
        let cursorBefore = try log.cursor()

        let error = try #require(throws: EventLogError.self) { try undoItem(log) }

        guard case .undoLimitReached(let type, let id, let limit) = error else {
            Issue.record("expected undoLimitReached, got \(error)")
            return
        }
        #expect(type == Item.entityType && id == "i1" && limit == 3)
        #expect(try log.eventCount() == countBefore)
        #expect(try log.cursor() == cursorBefore)
        #expect(try log.projection(Item.self, id: "i1")?.quantity == 2)
    }

    @Test("A new edit resets the count of consecutive undos")
    func editResetsUndoLimit() throws {
        let log = try makeLog(undoLimit: 2)
        try itemWithQuantities(log, [1, 2, 3, 4])
        for _ in 0..<2 { try undoItem(log) }
        clock.advance(by: 10)
        try log.append(NewEvent(item: "i1", .renamed(name: "Nuts")))

        try undoItem(log)

        #expect(try log.projection(Item.self, id: "i1")?.name == "Bolts")
    }

    @Test("Undo on an entity without events throws nothingToUndo")
    func nothingToUndo() throws {
        let log = try makeLog()
        try log.append(NewEvent(item: "other", .created(name: "Other", quantity: 1)))

        let error = try #require(throws: EventLogError.self) {
            try log.undo(entityType: Item.entityType, entityID: "i1")
        }

        guard case .nothingToUndo(let type, let id) = error else {
            Issue.record("expected nothingToUndo, got \(error)")
            return
        }
        #expect(type == Item.entityType && id == "i1")
        #expect(try log.eventCount() == 1)
    }

    @Test("An Undone naming an event the entity does not have is refused")
    func undoOfUnknownEventIsRefused() throws {
        let log = try makeLog()
        try itemWithQuantities(log, [5])
        let payload = Fixtures.undonePayload(UUID())

        #expect(throws: EventLogError.self) {
            try log.append(NewEvent(entityType: Item.entityType, entityID: "i1", payload: payload))
        }
        #expect(try log.eventCount() == 2)
    }

    @Test("Undoing an undo restores the first target")
    func undoOfUndoRestores() throws {
        let log = try makeLog()
        try itemWithQuantities(log, [5, 8])
        let firstUndo = try undoItem(log)
        clock.advance(by: 10)

        try log.append(
            NewEvent(
                entityType: Item.entityType, entityID: "i1", payload: Fixtures.undonePayload(firstUndo.event.eventID)))

        #expect(try log.projection(Item.self, id: "i1")?.quantity == 8)
    }

    @Test("An undo replicated to another replica gives the same projection there")
    func undoReplicates() throws {
        let a = try makeLog("a")
        let b = try makeLog("b")
        try itemWithQuantities(a, [5, 8])
        try b.ingest(try Fixtures.ownEvents(a))
        #expect(try b.projection(Item.self, id: "i1")?.quantity == 8)

        try undoItem(a)
        try b.ingest(try Fixtures.ownEvents(a))

        #expect(try b.projection(Item.self, id: "i1")?.quantity == 5)
        #expect(try b.projection(Item.self, id: "i1") == (try a.projection(Item.self, id: "i1")))
        #expect(try b.stateHash() == (try a.stateHash()))
    }

    @Test("An undo cancels its target even when the target came from a clock far ahead")
    func undoOfEventFromFarAheadClock() throws {
        let local = try makeLog("local")
        let day: Int64 = 24 * 60 * 60 * 1000
        try local.append(NewEvent(item: "i1", .created(name: "Bolts", quantity: 5)))
        // A peer whose clock is two days ahead sets the quantity; its time
        // does not move the local clock (skew protection).
        let ahead = Fixtures.itemEvent(
            "peer", seq: 1, time: clock.now + 2 * day, item: "i1", .quantityChanged(quantity: 99))
        try local.ingest([ahead])
        #expect(try local.projection(Item.self, id: "i1")?.quantity == 99)

        let undo = try undoItem(local)

        #expect(undo.event.payload == Fixtures.undonePayload(ahead.eventID))
        #expect(
            try local.projection(Item.self, id: "i1")?.quantity == 5,
            "the undo was appended at \(undo.event.timeMs), before its target at \(ahead.timeMs), so the fold ignores it"
        )
    }
}
