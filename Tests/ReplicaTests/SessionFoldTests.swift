import Foundation
import Testing

@testable import Replica

/// The session rules of the fold, on hand-built histories.
@Suite("Session fold")
struct SessionFoldTests {
    private var time: Int64 = 0
    private var seqs: [String: UInt64] = [:]

    private mutating func event(_ writer: String, _ payload: String, id: UUID = UUID()) -> Event {
        time += 10
        let seq = (seqs[writer] ?? 0) + 1
        seqs[writer] = seq
        return Event(
            eventID: id, feed: FeedID(replicaID: writer), seq: seq, timeMs: time, entityType: "item",
            entityID: "m1", payload: payload)
    }

    private mutating func edit(_ writer: String, _ quantity: Int64) -> Event {
        event(writer, ItemEvent.quantityChanged(quantity: quantity).payload)
    }

    @Test("While A holds the entity, B's events are its dropped tail; after the release they apply again")
    mutating func holderOnly() {
        let claim = event("A", SessionEvent.claimed(after: nil).payload)
        let mine = edit("A", 1)
        let theirs = edit("B", 2)
        let release = event("A", SessionEvent.released(forcedHolder: nil).payload)
        let later = edit("B", 3)

        let resolution = Fold.resolve(inCanonicalOrder: [claim, mine, theirs, release, later])

        #expect(resolution.effective == [mine, later])
        #expect(resolution.dropped == [DroppedEvent(event: theirs, holder: "A")])
        #expect(resolution.session == .free)
    }

    @Test("A claim naming the holder's claim takes over; one naming nothing is refused while held")
    mutating func takeoverNeedsTheClaimItNames() {
        let first = event("A", SessionEvent.claimed(after: nil).payload)
        let blind = event("C", SessionEvent.claimed(after: nil).payload)
        let takeover = event("B", SessionEvent.claimed(after: first.eventID).payload)
        let stale = edit("A", 5)

        let resolution = SessionFold.resolve(inCanonicalOrder: [first, blind, takeover, stale])

        #expect(resolution.claims.map(\.refusal) == [nil, "A holds it", nil])
        #expect(resolution.state == SessionState(holder: "B", claim: takeover.eventID, granted: false))
        #expect(resolution.dropped == [DroppedEvent(event: stale, holder: "B")])
    }

    @Test("A grant takes over an optimistic holder; an optimistic claim never takes over a grant")
    mutating func grantsOutrankOptimisticClaims() {
        let optimistic = event("A", SessionEvent.claimed(after: nil).payload)
        let grant = event(
            "relay", SessionEvent.claimGranted(request: UUID(), holder: "B", after: nil).payload)
        let late = event("A", SessionEvent.claimed(after: grant.eventID).payload)

        let resolution = SessionFold.resolve(inCanonicalOrder: [optimistic, grant, late])

        #expect(resolution.claims.map(\.refusal) == [nil, nil, "B holds it by a relay's grant"])
        #expect(resolution.state == SessionState(holder: "B", claim: grant.eventID, granted: true))
    }

    @Test("A forced release frees the holder it names and no other")
    mutating func forcedRelease() {
        let claim = event("A", SessionEvent.claimed(after: nil).payload)
        let wrongName = event("ops", SessionEvent.released(forcedHolder: "Z").payload)
        let held = SessionFold.resolve(inCanonicalOrder: [claim, wrongName]).state
        let forced = event("ops", SessionEvent.released(forcedHolder: "A").payload)
        let freed = SessionFold.resolve(inCanonicalOrder: [claim, wrongName, forced]).state

        #expect(held.holder == "A")
        #expect(freed == .free)
    }

    @Test("A thin client is one writer whichever node filed its events")
    mutating func thinClientWriter() {
        let claim = event("phone@relay-1", SessionEvent.claimed(after: nil).payload)
        let viaOther = event("phone@relay-2", ItemEvent.quantityChanged(quantity: 4).payload)

        let resolution = Fold.resolve(inCanonicalOrder: [claim, viaOther])

        #expect(resolution.effective == [viaOther])
        #expect(FeedID(replicaID: "phone@relay-2").writer == "phone")
    }

    @Test("An undo by a writer who does not hold the entity is dropped and cancels nothing")
    mutating func foreignUndo() {
        let created = edit("A", 1)
        let claim = event("A", SessionEvent.claimed(after: nil).payload)
        let undo = event("B", Fixtures.undonePayload(created.eventID))

        let resolution = Fold.resolve(inCanonicalOrder: [created, claim, undo])

        #expect(resolution.effective == [created])
        #expect(resolution.dropped.map(\.event) == [undo])
    }

    @Test("Session payloads round-trip; a session type with bad fields is no session event")
    func payloads() {
        let request = UUID()
        let events: [SessionEvent] = [
            .claimed(after: nil), .claimed(after: UUID()), .claimRequested(after: UUID()),
            .claimGranted(request: request, holder: "B", after: nil), .claimRefused(request: request, holder: "A"),
            .claimRefused(request: request, holder: nil), .released(forcedHolder: nil), .released(forcedHolder: "A"),
        ]
        for event in events { #expect(SessionEvent.parse(event.payload) == event) }
        #expect(SessionEvent.parse(#"{"type":"ClaimGranted","holder":"B"}"#) == nil)
        #expect(SessionEvent.parse(#"{"after":"nope","type":"Claimed"}"#) == nil)
        #expect(SessionEvent.parse(#"{"name":"Claimed","type":"Renamed"}"#) == nil)
    }

    @Test("Only a request's first answer counts: a grant after a refusal of the same request does not stand")
    mutating func firstAnswerCounts() {
        let request = event("p", SessionEvent.claimRequested(after: nil).payload)
        let refusal = event("relay-a", SessionEvent.claimRefused(request: request.eventID, holder: "q").payload)
        let grant = event(
            "relay-b", SessionEvent.claimGranted(request: request.eventID, holder: "p", after: nil).payload)

        let resolution = SessionFold.resolve(inCanonicalOrder: [request, refusal, grant])
        let report = EntitySession(entityType: "item", entityID: "m1", history: [request, refusal, grant])

        #expect(resolution.state == .free)
        #expect(resolution.claims.map(\.refusal) == ["its request was answered before"])
        #expect(report.request(request.eventID)?.answer == refusal)
    }

    @Test("Taken over means through takeovers alone: a claim of the entity after a release is not one")
    mutating func takenOverIsAChain() {
        let p = event("p", SessionEvent.claimed(after: nil).payload)
        let q = event("q", SessionEvent.claimed(after: p.eventID).payload)
        let r = event("r", SessionEvent.claimed(after: q.eventID).payload)
        let chain = EntitySession(entityType: "item", entityID: "m1", history: [p, q, r])
        let release = event("q", SessionEvent.released(forcedHolder: nil).payload)
        let fresh = event("r", SessionEvent.claimed(after: nil).payload)
        let afterRelease = EntitySession(entityType: "item", entityID: "m1", history: [p, q, release, fresh])

        #expect(chain.tookOver(from: "p") && chain.tookOver(from: "q") && !chain.tookOver(from: "r"))
        #expect(!afterRelease.tookOver(from: "p"))
        #expect(afterRelease.state.holder == "r")
    }
}
