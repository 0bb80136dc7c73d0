import Foundation
import Replica
import Testing

@testable import SyncProtocol

@Suite struct SyncSessionStateTests {
    let feed = FeedID(replicaID: "origin")
    let peerHello = Hello(replicaID: "peer", listenPort: 4100)

    func report(_ cursor: VectorCursor, count: Int64, byte: UInt8) -> StateReport {
        StateReport(
            summary: StateSummary(eventCount: count, hash: StateHash(bytes: Array(repeating: byte, count: 32))!),
            cursor: cursor)
    }

    func states(_ directives: [SyncSession.Directive]) -> [StateSummary] {
        directives.compactMap { directive in
            if case .send(.state(let summary)) = directive { return summary }
            return nil
        }
    }

    /// A session that has sent hello and `local`, with the peer's hello in.
    func opened(local: VectorCursor, state: StateReport?) -> SyncSession {
        var session = SyncSession(hello: Hello(replicaID: "me", listenPort: 1))
        if let state { session.localStateComputed(state) }
        _ = session.start(localCursor: local)
        _ = session.receive(.hello(peerHello))
        return session
    }

    @Test func aCurrentStateGoesOutWhenThePeersCursorArrives() {
        let mine = report([feed: 2], count: 2, byte: 1)
        var session = opened(local: [feed: 2], state: mine)
        #expect(states(session.receive(.cursor([feed: 2]))) == [mine.summary])
    }

    @Test func aChangedStateOfOurCursorNowGoesOutAtOnceAfterACursorMessageThatSaysIt() {
        var session = opened(local: [feed: 2], state: nil)
        _ = session.receive(.cursor([feed: 2]))
        #expect(states(session.tick()).isEmpty)
        _ = session.localCursorChanged([feed: 3])
        let changed = report([feed: 3], count: 3, byte: 2)
        #expect(session.localStateComputed(changed) == [.send(.cursor([feed: 3])), .send(.state(changed.summary))])
        #expect(session.tick() == [.send(.cursor([:]))])
        #expect(session.localStateComputed(changed).isEmpty)
        #expect(states(session.tick()).isEmpty)
    }

    @Test func aStateOfACursorNotYetAdvertisedWaitsForTheRound() {
        var session = opened(local: [feed: 2], state: report([feed: 3], count: 3, byte: 2))
        #expect(states(session.receive(.cursor([feed: 2]))).isEmpty)
        _ = session.localCursorChanged([feed: 3])
        #expect(states(session.tick()).count == 1)
    }

    @Test func aStateThatNoLongerDescribesOurCursorIsNotSent() {
        var session = opened(local: [feed: 2], state: nil)
        _ = session.receive(.cursor([feed: 2]))
        session.localStateComputed(report([feed: 2], count: 2, byte: 1))
        _ = session.localCursorChanged([feed: 4])
        #expect(states(session.tick()).isEmpty)
    }

    @Test func thePeersStateIsKeptWithTheCursorItReported() {
        var session = opened(local: [feed: 5], state: nil)
        _ = session.receive(.cursor([feed: 4]))
        let theirs = StateSummary(eventCount: 4, hash: StateHash(bytes: Array(repeating: 9, count: 32))!)
        // Ours is not known at that cursor: the node is asked to hash, should its log stand there.
        #expect(session.receive(.state(theirs)) == [.peerStateReported([feed: 4])])
        #expect(session.peerState == StateReport(summary: theirs, cursor: [feed: 4]))
        #expect(session.stateCheck == nil)
        #expect(session.peerStateIsCurrent)
        _ = session.eventsRead(
            EventPage(events: [
                Event(
                    eventID: UUID(), feed: feed, seq: 5, timeMs: 5, entityType: "item", entityID: "i", payload: "{}")
            ]))
        _ = session.receive(.ack(batchID: 1, heads: [feed: 5]))
        #expect(!session.peerStateIsCurrent)
    }

    @Test func statesAreComparedAtTheCursorThePeersCursorMessagesSaid() {
        var session = opened(local: [feed: 4], state: nil)
        _ = session.receive(.cursor([feed: 4]))
        session.localStateComputed(report([feed: 4], count: 4, byte: 9))
        // We send the peer seq 5 and it acknowledges it: that raises what we know
        // the peer holds, not the cursor its state describes.
        _ = session.localCursorChanged([feed: 5])
        _ = session.eventsRead(
            EventPage(events: [
                Event(
                    eventID: UUID(), feed: feed, seq: 5, timeMs: 5, entityType: "item", entityID: "i", payload: "{}")
            ]))
        _ = session.receive(.ack(batchID: 1, heads: [feed: 5]))
        #expect(session.peerCursor == [feed: 5])
        let theirs = StateSummary(eventCount: 4, hash: StateHash(bytes: Array(repeating: 9, count: 32))!)
        #expect(session.receive(.state(theirs)).isEmpty)
        #expect(session.stateCheck == StateCheck(cursor: [feed: 4], matched: true))
        let other = StateSummary(eventCount: 4, hash: StateHash(bytes: Array(repeating: 8, count: 32))!)
        _ = session.receive(.state(other))
        #expect(session.stateCheck == StateCheck(cursor: [feed: 4], matched: false))
    }

    @Test func aStateBeforeTheCursorIsAProtocolError() {
        var session = opened(local: [:], state: nil)
        let theirs = StateSummary(eventCount: 0, hash: StateHash(bytes: Array(repeating: 0, count: 32))!)
        let directives = session.receive(.state(theirs))
        #expect(directives.contains { if case .close = $0 { true } else { false } })
    }
}
