import Foundation
import Replica
import Testing

@testable import SyncProtocol

@Suite struct SyncSessionTests {
    let feed = FeedID(replicaID: "origin")
    let defaults = SyncSession.Configuration()

    func events(_ range: ClosedRange<UInt64>) -> [Event] { SessionFixtures.events(feed, range) }

    func syncing(
        local: VectorCursor, peer: VectorCursor, configure: (inout SyncSession.Configuration) -> Void = { _ in }
    ) -> (SyncSession, [SyncSession.Directive]) {
        SessionFixtures.syncing(local: local, peer: peer, configure: configure)
    }

    @Test func startSendsHelloAndTheWholeCursorFollowsThePeersAdmittedHello() {
        var session = SyncSession(hello: Hello(replicaID: "me", listenPort: 1))
        #expect(session.start(localCursor: [feed: 4]) == [.send(.hello(Hello(replicaID: "me", listenPort: 1)))])
        let peer = Hello(replicaID: "peer", listenPort: 2)
        #expect(session.receive(.hello(peer)) == [.identified(peer), .send(.cursor([feed: 4]))])
    }

    @Test func aPeerRefusedForItsIdentityLearnsNoCursorAndHearsWhy() throws {
        var configuration = SyncSession.Configuration()
        configuration.trust = IdentityTests.trust(nowMs: IdentityTests.expiresMs)
        var session = SyncSession(hello: Hello(replicaID: "me", listenPort: 1), configuration: configuration)
        #expect(session.start(localCursor: [feed: 4]).count == 1)
        let binding = [UInt8](repeating: 5, count: 32)
        var refusing = SyncSession(
            hello: Hello(replicaID: "me", listenPort: 1), configuration: configuration, binding: binding,
            role: .responder)
        _ = refusing.start(localCursor: [feed: 4])
        let identity = PeerIdentity.proving(
            IdentityTests.replica, certificate: IdentityTests.vector(), binding: binding, role: .initiator)
        let reason =
            "refused: the certificate of replica alice-tablet expired at 2026-12-30T03:06:40Z; ask an admin for a new "
            + "one (`peerd invite`) and run `peerd init --join CODE` on that replica"
        #expect(
            refusing.receive(.hello(Hello(replicaID: "alice-tablet", listenPort: 2, identity: identity)))
                == [.send(.goodbye(reason: reason)), .close(reason: reason)])
        #expect(refusing.peerIdentity == nil && !refusing.hasSynced)
        // Without an identity at all, the reason names the missing certificate.
        let directives = session.receive(.hello(Hello(replicaID: "bob", listenPort: 2)))
        #expect(
            directives.first
                == .send(.goodbye(reason: "refused: " + IdentityError.noCertificate(replicaID: "bob").description)))
    }

    @Test func thePeersCursorAsksForExactlyWhatItLacks() {
        let (_, directives) = syncing(local: [feed: 10], peer: [feed: 4])
        #expect(
            directives == [
                .readEvents(
                    ranges: [FeedRange(feed: feed, seqs: 5...10)], maxEvents: defaults.batchEvents,
                    maxBytes: defaults.batchBytes)
            ])
    }

    @Test func nothingIsReadWhenThePeerHoldsEverything() {
        let (_, directives) = syncing(local: [feed: 10], peer: [feed: 12])
        #expect(directives.isEmpty)
    }

    @Test func theWindowBoundsBatchesInFlightUntilAcksArriveAndOnePageWaitsReadAhead() {
        var (session, _) = syncing(local: [feed: 10], peer: [:]) {
            $0.window = 2; $0.batchEvents = 3; $0.liveBatchEvents = 0
        }
        let log = events(1...10)
        func page(_ seqs: ClosedRange<UInt64>) -> [Event] {
            Array(log[Int(seqs.lowerBound - 1)..<Int(seqs.upperBound)])
        }
        var sent: [EventBatch] = []
        var reads: [ClosedRange<UInt64>] = []
        var next = session.eventsRead(EventPage(events: page(1...3)))
        while true {
            for case .send(.events(let batch)) in next { sent.append(batch) }
            guard case .readEvents(let ranges, _, _)? = next.last else { break }
            reads.append(ranges[0].seqs)
            let start = ranges[0].seqs.lowerBound
            next = session.eventsRead(EventPage(events: page(start...min(start + 2, 10))))
        }
        // Two batches out; the third page (7...9) was read and waits for an ack.
        #expect(sent.map(\.batchID) == [1, 2])
        #expect(reads == [4...10, 7...10])
        let afterAck = session.receive(.ack(batchID: 1, heads: [feed: 3]))
        #expect(
            afterAck == [
                .send(.events(EventBatch(batchID: 3, events: page(7...9)))),
                .readEvents(
                    ranges: [FeedRange(feed: feed, seqs: 10...10)], maxEvents: 3, maxBytes: defaults.batchBytes),
            ])
        #expect(session.eventsRead(EventPage(events: page(10...10))).isEmpty)  // the window is full again: held
        let afterSecondAck = session.receive(.ack(batchID: 2, heads: [feed: 6]))
        #expect(afterSecondAck == [.send(.events(EventBatch(batchID: 4, events: page(10...10))))])
    }

    @Test func liveBatchesGoPastAFullWindowByTwoAndNoMore() {
        var (session, _) = syncing(local: [feed: 10], peer: [:]) {
            $0.window = 2; $0.batchEvents = 1; $0.liveBatchEvents = 1; $0.liveOverWindow = 2
        }
        let log = events(1...10)
        var sent: [EventBatch] = []
        var next = session.eventsRead(EventPage(events: [log[0]]))
        while true {
            for case .send(.events(let batch)) in next { sent.append(batch) }
            guard case .readEvents(let ranges, _, _)? = next.last else { break }
            let seq = Int(ranges[0].seqs.lowerBound)
            next = session.eventsRead(EventPage(events: [log[seq - 1]]))
        }
        // Window 2 and two live batches past it: four out, the fifth read and held for an ack.
        #expect(sent.map(\.batchID) == [1, 2, 3, 4])
        let afterAck = session.receive(.ack(batchID: 1, heads: [feed: 1]))
        #expect(afterAck.contains(.send(.events(EventBatch(batchID: 5, events: [log[4]])))))
    }

    @Test func aNewLocalEventIsPushedAtOnce() {
        var (session, _) = syncing(local: [feed: 2], peer: [feed: 2])
        #expect(
            session.localCursorChanged([feed: 3])
                == [
                    .readEvents(
                        ranges: [FeedRange(feed: feed, seqs: 3...3)], maxEvents: defaults.batchEvents,
                        maxBytes: defaults.batchBytes)
                ])
    }

    @Test func withoutLivePushNewEventsWaitForTheNextCursorExchange() {
        var (session, _) = syncing(local: [feed: 2], peer: [feed: 2]) { $0.livePush = false }
        #expect(session.localCursorChanged([feed: 3]).isEmpty)
        #expect(!session.receive(.cursor(VectorCursor())).isEmpty)
    }

    @Test func eventsReceivedAreNeverSentBack() {
        var (session, _) = syncing(local: [feed: 2], peer: [feed: 2])
        let batch = EventBatch(batchID: 1, events: events(3...5))
        #expect(session.receive(.events(batch)) == [.ingest(batch)])
        #expect(session.localCursorChanged([feed: 5]).isEmpty)
        let afterIngest = session.ingested(batchID: 1, cursor: [feed: 5], batchFeeds: [feed], newEvents: [feed: 3])
        #expect(afterIngest == [.send(.ack(batchID: 1, heads: [feed: 5]))])
    }

    @Test func anIdleRoundSendsAnEmptyCursor() {
        var (session, _) = syncing(local: [feed: 2], peer: [feed: 2])
        #expect(session.tick() == [.send(.cursor(VectorCursor()))])
        _ = session.localCursorChanged([feed: 3])
        #expect(session.tick() == [.send(.cursor([feed: 3]))])
        #expect(session.tick() == [.send(.cursor(VectorCursor()))])
    }

    @Test func aFeedThePeerCouldNotStoreIsResentOncePerPosition() {
        var (session, _) = syncing(local: [feed: 3], peer: [feed: 0]) { $0.window = 1 }
        _ = session.eventsRead(EventPage(events: events(1...3)))
        _ = session.receive(.ack(batchID: 1, heads: [feed: 1]))
        let first = session.receive(.cursor([feed: 1]))
        #expect(
            first == [
                .readEvents(
                    ranges: [FeedRange(feed: feed, seqs: 2...3)], maxEvents: defaults.batchEvents,
                    maxBytes: defaults.batchBytes)
            ])
        _ = session.eventsRead(EventPage(events: events(2...3)))
        _ = session.receive(.ack(batchID: 2, heads: [feed: 1]))
        #expect(session.receive(.cursor([feed: 1])).isEmpty)
    }

    @Test func aHelloWithAnotherProtocolVersionClosesTheSession() {
        var session = SyncSession(hello: Hello(replicaID: "me", listenPort: 1))
        _ = session.start(localCursor: [:])
        let directives = session.receive(.hello(Hello(replicaID: "peer", listenPort: 1, protocolVersion: 9)))
        let reason = "incompatible protocol version 9 in the peer's hello; this node speaks \(WireProtocol.version)"
        #expect(directives.contains(.close(reason: reason)))
        #expect(session.peer == nil)
    }

    @Test func aHelloFromItselfClosesTheSession() {
        var session = SyncSession(hello: Hello(replicaID: "me", listenPort: 1))
        _ = session.start(localCursor: [:])
        let directives = session.receive(.hello(Hello(replicaID: "me", listenPort: 1)))
        #expect(directives.contains(.close(reason: "connected to itself")))
    }

    @Test func anOutOfOrderMessageClosesWithTheStateInTheReason() {
        var session = SyncSession(hello: Hello(replicaID: "me", listenPort: 1))
        _ = session.start(localCursor: [:])
        let directives = session.receive(.ack(batchID: 1, heads: [:]))
        guard case .close(let reason)? = directives.last else {
            Issue.record("expected a close, got \(directives)")
            return
        }
        #expect(reason.contains("unexpected ack in state awaitingHello"))
    }

    @Test func anAckForABatchNeverSentIsAProtocolError() {
        var (session, _) = syncing(local: [feed: 2], peer: [feed: 2])
        #expect(session.receive(.ack(batchID: 9, heads: [:])).contains(.close(reason: "ack for unsent batch 9")))
    }

    @Test func progressComesFromCursorsAlone() {
        let (session, _) = syncing(
            local: [feed: 10, FeedID(replicaID: "x"): 1], peer: [feed: 4, FeedID(replicaID: "y"): 7])
        #expect(session.progress.toReceive == 7)
        #expect(session.progress.toSend == 7)
    }
}
