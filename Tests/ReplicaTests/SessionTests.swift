import Foundation
import TestSupport
import Testing

@testable import Replica

/// Claims, takeovers, grants and releases on real event logs.
@Suite("Sessions")
struct SessionTests {
    let directory: TemporaryDirectory
    let clock = ManualClock(1_000)

    init() throws {
        directory = try TemporaryDirectory()
    }

    private func makeLog(_ name: String, undoLimit: Int = 10) throws -> EventLog {
        try EventLog.create(
            at: directory.path("\(name).db"), replicaID: name, options: .testing(clock: clock, undoLimit: undoLimit))
    }

    /// Gives `to` every event `from` holds that it lacks.
    private func sync(_ from: EventLog, to: EventLog) throws {
        try to.ingest(Fixtures.allEvents(from).map(\.event))
    }

    private func write(_ log: EventLog, _ quantity: Int64) throws {
        clock.advance(by: 10)
        try log.append(NewEvent(item: "m1", .quantityChanged(quantity: quantity)))
    }

    /// What `body` threw, as a user reads it; nil when it threw nothing.
    private func refusal(_ body: () throws -> Void) -> String? {
        do {
            try body()
            return nil
        } catch {
            return "\(error)"
        }
    }

    private func session(_ log: EventLog) throws -> EntitySession {
        try log.session(entityType: Item.entityType, entityID: "m1")
    }

    @Test("Takeover while the old holder is offline: every replica shows the same state and dropped tail")
    func offlineTakeover() throws {
        let (a, b, c) = (try makeLog("a"), try makeLog("b"), try makeLog("c"))
        try a.append(NewEvent(item: "m1", .created(name: "Match", quantity: 0)))
        clock.advance(by: 10)
        try a.claim(entityType: Item.entityType, entityID: "m1")
        try write(a, 1)
        try sync(a, to: b)
        // a goes offline and keeps writing; b takes over.
        clock.advance(by: 10)
        #expect(throws: EventLogError.self) { try b.claim(entityType: Item.entityType, entityID: "m1") }
        try b.claim(entityType: Item.entityType, entityID: "m1", takeover: true)
        try write(b, 10)
        try write(a, 2)
        try write(a, 3)
        try write(b, 11)
        // Reconnect in different orders.
        try sync(a, to: c)
        try sync(b, to: c)
        try sync(b, to: a)
        try sync(a, to: b)

        for log in [a, b, c] {
            #expect(try log.projection(Item.self, id: "m1")?.quantity == 11)
            #expect(try session(log).state.holder == "b")
            #expect(try session(log).dropped.map(\.event.writer) == ["a", "a"])
        }
        #expect(try a.stateHash() == b.stateHash())
        #expect(try b.stateHash() == c.stateHash())
        // a now learns it was taken over and refuses further writes, naming b and its two lost writes.
        #expect(
            refusal { try write(a, 4) }
                == EventLogError.takenOver(entityType: "item", entityID: "m1", holder: "b", droppedOwn: 2).description)
        #expect(
            refusal { try write(c, 4) }
                == EventLogError.entityHeld(entityType: "item", entityID: "m1", holder: "b").description)
        #expect(try a.eventCount() == b.eventCount())
    }

    @Test("Held projections fold the same event by event as from the whole history")
    func fastPathMatchesRefold() throws {
        let (a, b) = (try makeLog("a"), try makeLog("b"))
        try a.append(NewEvent(item: "m1", .created(name: "Match", quantity: 0)))
        try a.claim(entityType: Item.entityType, entityID: "m1")
        for quantity in 1...5 {
            try write(a, Int64(quantity))
            try write(b, Int64(100 + quantity))
        }
        let oneByOne = try makeLog("one")
        let all = try Fixtures.allEvents(a).map(\.event) + Fixtures.allEvents(b).map(\.event)
        for event in all { try oneByOne.ingest([event]) }
        let atOnce = try makeLog("all")
        try atOnce.ingest(all.reversed())

        #expect(try oneByOne.projection(Item.self, id: "m1")?.quantity == 5)
        #expect(try oneByOne.stateHash() == atOnce.stateHash())
        #expect(try session(oneByOne).dropped.count == 5)
        #expect(try session(oneByOne) == session(atOnce))
    }

    @Test("Two requests answered by one relay in the same millisecond: exactly one is granted")
    func relayGrantsOne() throws {
        let (a, b, relay) = (try makeLog("a"), try makeLog("b"), try makeLog("relay"))
        let requestA = try a.requestClaim(entityType: Item.entityType, entityID: "m1")
        let requestB = try b.requestClaim(entityType: Item.entityType, entityID: "m1")
        try sync(b, to: relay)
        try sync(a, to: relay)
        let requests = try relay.claimRequests(after: 0, limit: 10)
        #expect(requests.map(\.event.eventID) == [requestB.event.eventID, requestA.event.eventID])
        for request in requests { try relay.answerClaimRequest(request.event) }
        #expect(try relay.answerClaimRequest(requests[0].event) == nil)  // answered once
        try sync(relay, to: a)
        try sync(relay, to: b)

        for log in [a, b, relay] {
            let report = try session(log)
            #expect(report.state.holder == "b")
            #expect(report.state.granted)
            #expect(report.request(requestB.event.eventID)?.grantStood == true)
            #expect(
                SessionEvent.parse(try #require(report.request(requestA.event.eventID)?.answer).payload)
                    == .claimRefused(request: requestA.event.eventID, holder: "b"))
        }
        // An optimistic claim cannot take over a grant.
        #expect(
            refusal { try a.claim(entityType: Item.entityType, entityID: "m1", takeover: true) }
                == EventLogError.claimNeedsGrant(entityType: "item", entityID: "m1", holder: "b").description)
    }

    @Test("Two relays cut off from each other both grant: the fold keeps the first grant on every replica")
    func twoRelaysGrant() throws {
        let (a, b, r1, r2) = (try makeLog("a"), try makeLog("b"), try makeLog("r1"), try makeLog("r2"))
        let requestA = try a.requestClaim(entityType: Item.entityType, entityID: "m1")
        try sync(a, to: r1)
        try r1.answerClaimRequest(requestA.event)
        clock.advance(by: 1)
        let requestB = try b.requestClaim(entityType: Item.entityType, entityID: "m1")
        try sync(b, to: r2)
        try r2.answerClaimRequest(requestB.event)
        try sync(r2, to: r1)
        try sync(r1, to: r2)

        for relay in [r1, r2] {
            let report = try session(relay)
            #expect(report.state.holder == "a")
            #expect(report.request(requestB.event.eventID)?.grantStood == false)
        }
    }

    @Test("A forced release frees an entity whose holder is lost; the holder's own release needs no force")
    func forcedRelease() throws {
        let (a, ops) = (try makeLog("a"), try makeLog("ops"))
        try a.claim(entityType: Item.entityType, entityID: "m1")
        try sync(a, to: ops)
        #expect(
            refusal { try ops.release(entityType: Item.entityType, entityID: "m1") }
                == EventLogError.notHeld(entityType: "item", entityID: "m1", holder: "a").description)
        try ops.release(entityType: Item.entityType, entityID: "m1", force: true)
        try write(ops, 7)
        #expect(try session(ops).state == .free)
        #expect(try ops.projection(Item.self, id: "m1")?.quantity == 7)
        #expect(
            refusal { try ops.release(entityType: Item.entityType, entityID: "m1", force: true) }
                == EventLogError.notHeld(entityType: "item", entityID: "m1", holder: nil).description)
    }

    @Test("Undo inside a session: the holder's undos count to the limit, another's undo is refused")
    func undoInsideSession() throws {
        let (a, b) = (try makeLog("a", undoLimit: 2), try makeLog("b"))
        try a.append(NewEvent(item: "m1", .created(name: "Match", quantity: 0)))
        try a.claim(entityType: Item.entityType, entityID: "m1")
        for quantity in 1...3 { try write(a, Int64(quantity)) }
        try a.undo(entityType: Item.entityType, entityID: "m1")
        try a.undo(entityType: Item.entityType, entityID: "m1")
        #expect(
            refusal { try a.undo(entityType: Item.entityType, entityID: "m1") }
                == EventLogError.undoLimitReached(entityType: "item", entityID: "m1", limit: 2).description)
        #expect(try a.projection(Item.self, id: "m1")?.quantity == 1)
        try sync(a, to: b)
        #expect(
            refusal { try b.undo(entityType: Item.entityType, entityID: "m1") }
                == EventLogError.entityHeld(entityType: "item", entityID: "m1", holder: "a").description)
    }

    @Test("Session events go through claim and release, never a plain append; a claim cannot be undone")
    func sessionEventsAreNotPlainEvents() throws {
        let a = try makeLog("a")
        #expect(throws: EventLogError.self) {
            try a.append(
                NewEvent(entityType: "item", entityID: "m1", payload: SessionEvent.claimed(after: nil).payload))
        }
        let claim = try a.claim(entityType: Item.entityType, entityID: "m1")
        #expect(try a.claim(entityType: Item.entityType, entityID: "m1") == claim)  // holding already: nothing new
        #expect(throws: EventLogError.self) {
            try a.append(
                NewEvent(entityType: "item", entityID: "m1", payload: Fixtures.undonePayload(claim.event.eventID)))
        }
    }

    @Test("The holder survives reopening the file")
    func holderIsStored() throws {
        let path = directory.path("a.db")
        do {
            let a = try makeLog("a")
            try a.claim(entityType: Item.entityType, entityID: "m1")
            try a.writePendingProjections()
        }
        #expect(try RawSQL.rows(path, "SELECT holder FROM entities WHERE entity_id = 'm1'") { $0.text(0) } == ["a"])
        let reopened = try EventLog.open(at: path, options: .testing(clock: clock))
        let other = try makeLog("b")
        try write(other, 3)
        try sync(other, to: reopened)
        #expect(try reopened.projection(Item.self, id: "m1")?.quantity == 0)
        #expect(try session(reopened).dropped.count == 1)
    }

    @Test("An entity claimed before anything else happened to it has no projection until its first event")
    func claimAloneMakesNoProjection() throws {
        let a = try makeLog("a")
        try a.claim(entityType: Item.entityType, entityID: "m1")
        #expect(try a.projection(Item.self, id: "m1") == nil)
        #expect(try a.projections(Item.self).isEmpty)
        let empty = try makeLog("empty")
        #expect(try a.stateHash() == empty.stateHash())
        try a.writePendingProjections()
        #expect(try a.projection(Item.self, id: "m1") == nil)
        #expect(try a.checkIntegrity(refold: true).findings.isEmpty)
        let b = try makeLog("b")
        try sync(a, to: b)
        try b.writePendingProjections()
        #expect(
            refusal { try write(b, 1) }
                == EventLogError.entityHeld(entityType: "item", entityID: "m1", holder: "a").description)
        try write(a, 4)
        #expect(try a.projection(Item.self, id: "m1")?.quantity == 4)
        #expect(try session(a).state.holder == "a")
        #expect(try a.checkIntegrity(refold: true).findings.isEmpty)
    }
}
