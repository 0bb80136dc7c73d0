import Foundation
import TestSupport
import Testing

@testable import Replica

/// The reference scenarios of the Item domain, end to end through the event log.
@Suite("Reference scenarios")
struct ReferenceScenarioTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory()
    }

    @Test("Folding Created, QuantityChanged and NoteChanged gives the expected item")
    func foldOfCreatedQuantityAndNote() throws {
        let clock = ManualClock(1_000)
        let log = try EventLog.create(at: directory.path("a.db"), replicaID: "a", options: .testing(clock: clock))
        try log.append(NewEvent(item: "i1", .created(name: "Bolts", quantity: 5)))
        clock.set(2_000)
        try log.append(NewEvent(item: "i1", .quantityChanged(quantity: 8)))
        clock.set(3_000)
        try log.append(NewEvent(item: "i1", .noteChanged(note: "aisle 4")))

        let item = try #require(try log.projection(Item.self, id: "i1"))
        #expect(item.id == "i1")
        #expect(item.name == "Bolts")
        #expect(item.quantity == 8)
        #expect(item.note == "aisle 4")
        #expect(!item.deleted)
        #expect(item.lastModifiedMs == 3_000)
    }

    @Test("Two replicas that ingest each other's edits in opposite orders converge")
    func twoReplicasConverge() throws {
        let clockA = ManualClock(10_000)
        let clockB = ManualClock(10_005)
        let a = try EventLog.create(at: directory.path("a.db"), replicaID: "a", options: .testing(clock: clockA))
        let b = try EventLog.create(at: directory.path("b.db"), replicaID: "b", options: .testing(clock: clockB))
        try a.append(NewEvent(item: "i1", .created(name: "Bolts", quantity: 5)))
        try a.append(NewEvent(item: "i2", .created(name: "Nuts", quantity: 1)))
        try b.append(NewEvent(item: "i1", .renamed(name: "Hex bolts")))
        try b.append(NewEvent(item: "i1", .quantityChanged(quantity: 7)))
        try a.append(NewEvent(item: "i1", .noteChanged(note: "from a")))
        try b.append(NewEvent(item: "i2", .deleted))

        // a receives b's feed one event at a time; b receives a's feed in one
        // batch, offered newest first.
        for event in try Fixtures.ownEvents(b) { try a.ingest([event]) }
        try b.ingest(Array(try Fixtures.ownEvents(a).reversed()))

        #expect(try a.projections(Item.self) == (try b.projections(Item.self)))
        #expect(try a.stateHash() == (try b.stateHash()))
        #expect(try a.projections(Item.self).count == 2)
    }

    @Test("Deletion wins over a later rename from another replica")
    func deletionWinsOverLaterEdit() throws {
        let log = try EventLog.create(
            at: directory.path("a.db"), replicaID: "local", options: .testing(clock: ManualClock(50)))
        let report = try log.ingest([
            Fixtures.itemEvent("r1", seq: 1, time: 50, item: "i1", .created(name: "Bolts", quantity: 5)),
            Fixtures.itemEvent("r1", seq: 2, time: 100, item: "i1", .deleted),
            Fixtures.itemEvent("r2", seq: 1, time: 200, item: "i1", .renamed(name: "Nuts")),
        ])
        #expect(report.stored.count == 3)

        let item = try #require(try log.projection(Item.self, id: "i1"))
        #expect(item.deleted)
        #expect(item.name == "Bolts")
        #expect(item.lastModifiedMs == 100)
    }

    @Test("Deletion wins when the later rename arrives before the delete")
    func deletionWinsWhateverTheArrivalOrder() throws {
        let log = try EventLog.create(
            at: directory.path("a.db"), replicaID: "local", options: .testing(clock: ManualClock(50)))
        try log.ingest([Fixtures.itemEvent("r2", seq: 1, time: 200, item: "i1", .renamed(name: "Nuts"))])
        try log.ingest([
            Fixtures.itemEvent("r1", seq: 1, time: 50, item: "i1", .created(name: "Bolts", quantity: 5)),
            Fixtures.itemEvent("r1", seq: 2, time: 100, item: "i1", .deleted),
        ])

        let item = try #require(try log.projection(Item.self, id: "i1"))
        #expect(item.deleted)
        #expect(item.name == "Bolts")
        #expect(item.lastModifiedMs == 100)
    }

    @Test("Events ordered before Created apply, then Created sets name and quantity")
    func eventsBeforeCreatedApply() throws {
        let log = try EventLog.create(
            at: directory.path("a.db"), replicaID: "local", options: .testing(clock: ManualClock(0)))
        // r2's clock is behind: its edits sort before r1's Created.
        try log.ingest([
            Fixtures.itemEvent("r2", seq: 1, time: 10, item: "i1", .quantityChanged(quantity: 99)),
            Fixtures.itemEvent("r2", seq: 2, time: 20, item: "i1", .noteChanged(note: "early note")),
            Fixtures.itemEvent("r2", seq: 3, time: 25, item: "i1", .renamed(name: "Early name")),
        ])
        try log.ingest([
            Fixtures.itemEvent("r1", seq: 1, time: 30, item: "i1", .created(name: "Bolts", quantity: 5))
        ])

        let item = try #require(try log.projection(Item.self, id: "i1"))
        #expect(item.name == "Bolts")
        #expect(item.quantity == 5)
        #expect(item.note == "early note")
        #expect(item.lastModifiedMs == 30)
    }

    @Test("Item.apply ignores everything after a delete")
    func itemApplyIgnoresEventsAfterDelete() {
        var item = Item(id: "i1")
        let info = { (time: Int64) in ModificationInfo(eventID: UUID(), replicaID: "r", seq: 1, timeMs: time) }
        item.apply(.created(name: "Bolts", quantity: 5), info: info(1))
        item.apply(.deleted, info: info(2))
        item.apply(.renamed(name: "Nuts"), info: info(3))
        item.apply(.noteChanged(note: "late"), info: info(4))

        var expected = Item(id: "i1")
        expected.name = "Bolts"
        expected.quantity = 5
        expected.deleted = true
        expected.lastModifiedMs = 2
        #expect(item == expected)
    }
}
