import Foundation
import TestSupport
import Testing

@testable import Replica

/// Poison events: JSON objects that the item domain cannot decode.
@Suite("Poison events")
struct PoisonEventTests {
    let directory: TemporaryDirectory
    let clock = ManualClock(1_000)

    init() throws {
        directory = try TemporaryDirectory()
    }

    private func makeLog(_ name: String) throws -> EventLog {
        try EventLog.create(at: directory.path("\(name).db"), replicaID: name, options: .testing(clock: clock))
    }

    private let created = Fixtures.itemEvent("r1", seq: 1, time: 100, item: "i1", .created(name: "Bolts", quantity: 5))
    private let poison = Fixtures.rawEvent("r2", seq: 1, time: 150, entity: "i1", payload: #"{"type":"Teleported"}"#)
    private let renamed = Fixtures.itemEvent("r1", seq: 2, time: 200, item: "i1", .renamed(name: "Nuts"))

    @Test("A poison event is stored, skipped by the fold and counted")
    func poisonIsStoredSkippedAndCounted() throws {
        let log = try makeLog("a")

        let report = try log.ingest([created, poison, renamed])

        #expect(report.isComplete)
        #expect(report.stored.count == 3)
        #expect(try log.eventCount() == 3)
        #expect(try log.poisonEventCount() == 1)
        let item = try #require(try log.projection(Item.self, id: "i1"))
        #expect(item.name == "Nuts" && item.quantity == 5 && item.lastModifiedMs == 200)
    }

    @Test("A poison event does not change the item's last modification time")
    func poisonIsNotAModification() throws {
        let log = try makeLog("a")
        let latePoison = Fixtures.rawEvent("r2", seq: 1, time: 900, entity: "i1", payload: #"{"type":"Teleported"}"#)

        try log.ingest([created, latePoison])

        #expect(try log.projection(Item.self, id: "i1")?.lastModifiedMs == 100)
        #expect(try log.poisonEventCount() == 1)
    }

    @Test("Two replicas that receive a poison event in different orders agree")
    func replicasAgreeOnPoison() throws {
        let a = try makeLog("a")
        let b = try makeLog("b")

        try a.ingest([created])
        try a.ingest([renamed])
        try a.ingest([poison])
        try b.ingest([poison])
        try b.ingest([created, renamed])

        #expect(try a.stateHash() == (try b.stateHash()))
        #expect(try a.projection(Item.self, id: "i1") == (try b.projection(Item.self, id: "i1")))
        #expect(try a.poisonEventCount() == 1)
        #expect(try b.poisonEventCount() == 1)
    }

    @Test("A poison event is replicated onwards like any other")
    func poisonIsReplicated() throws {
        let a = try makeLog("a")
        try a.ingest([created, poison])
        let c = try makeLog("c")

        var pages = try a.missingEventPages(for: try c.cursor())
        while let page = try pages.next() { try c.ingest(page) }

        #expect(try c.eventCount() == 2)
        #expect(try c.poisonEventCount() == 1)
        #expect(try c.stateHash() == (try a.stateHash()))
    }

    @Test("Replicas agree on the poison count when a poison event is undone")
    func poisonCountAgreesWhenPoisonIsUndone() throws {
        // r3 saw the poison event and undid it (its undo sorts after it).
        let undo = Fixtures.rawEvent(
            "r3", seq: 1, time: 300, entity: "i1", payload: Fixtures.undonePayload(poison.eventID))
        let a = try makeLog("a")
        try a.ingest([created, poison])
        try a.ingest([undo])
        let b = try makeLog("b")
        try b.ingest([created, poison, undo])

        #expect(try a.stateHash() == (try b.stateHash()))
        #expect(
            try a.poisonEventCount() == (try b.poisonEventCount()),
            "a folded the poison event before its undo arrived; b never folded it")
    }
}
