import Foundation
import Replica
import Testing

@testable import SyncProtocol

/// Link pruning in the pure session: a forwarded batch that brought nothing
/// new prunes its origin on that link, a pruned link that brings new events
/// grafts it, and a pruned origin still goes at the round.
@Suite struct LinkPruningTests {
    let forwarded = FeedID(replicaID: "origin")
    let peersOwn = FeedID(replicaID: "peer")
    let peersClient = FeedID(replicaID: "phone@peer")
    let mine = FeedID(replicaID: "me")

    func events(_ feed: FeedID, _ range: ClosedRange<UInt64>) -> [Event] { SessionFixtures.events(feed, range) }

    func syncing(
        local: VectorCursor, peer: VectorCursor, configure: (inout SyncSession.Configuration) -> Void = { _ in }
    ) -> SyncSession {
        SessionFixtures.syncing(local: local, peer: peer, configure: configure).0
    }

    /// Receives batch `id` of `events` and answers it as ingested, `fresh` of them new per feed.
    func deliver(
        _ events: [Event], id: UInt64, to session: inout SyncSession, cursor: VectorCursor, fresh: [FeedID: Int]
    ) -> [SyncSession.Directive] {
        let batch = EventBatch(batchID: id, events: events)
        #expect(session.receive(.events(batch)) == [.ingest(batch)])
        return session.ingested(batchID: id, cursor: cursor, batchFeeds: batch.feeds, newEvents: fresh)
    }

    @Test func aForwardedBatchOfDuplicatesPrunesItsOriginOnce() {
        var session = syncing(local: [forwarded: 3], peer: [forwarded: 1])
        let first = deliver(events(forwarded, 2...3), id: 1, to: &session, cursor: [forwarded: 3], fresh: [:])
        #expect(first == [.send(.ack(batchID: 1, heads: [forwarded: 3])), .send(.prune(origins: ["origin"]))])
        #expect(session.prunedOrigins == ["origin"])
        let again = deliver(events(forwarded, 4...4), id: 2, to: &session, cursor: [forwarded: 4], fresh: [:])
        #expect(again == [.send(.ack(batchID: 2, heads: [forwarded: 4]))])
    }

    @Test func duplicatesOfThePeersOwnFeedsNeverPrune() {
        var session = syncing(local: [peersOwn: 2, peersClient: 2], peer: [:])
        let batch = events(peersOwn, 1...2) + events(peersClient, 1...2)
        let directives = deliver(batch, id: 1, to: &session, cursor: [peersOwn: 2, peersClient: 2], fresh: [:])
        #expect(directives == [.send(.ack(batchID: 1, heads: [peersOwn: 2, peersClient: 2]))])
        #expect(session.prunedOrigins.isEmpty)
    }

    @Test func aBatchWithSomethingNewOfAnOriginDoesNotPruneIt() {
        var session = syncing(local: [forwarded: 1], peer: [:])
        let other = FeedID(replicaID: "origin", scope: "second")
        let batch = events(forwarded, 1...1) + events(other, 1...1)
        let directives = deliver(batch, id: 1, to: &session, cursor: [forwarded: 1, other: 1], fresh: [other: 1])
        #expect(directives == [.send(.ack(batchID: 1, heads: [forwarded: 1, other: 1]))])
    }

    @Test func newEventsOverAPrunedLinkGraftItOnceTheRoundsShowItLost() {
        var session = syncing(local: [forwarded: 3], peer: [forwarded: 1])
        _ = deliver(events(forwarded, 2...3), id: 1, to: &session, cursor: [forwarded: 3], fresh: [:])
        // Before our next rounds, a new event may have been pushed before the prune arrived.
        _ = session.tick()
        let raced = deliver(
            events(forwarded, 4...4), id: 2, to: &session, cursor: [forwarded: 4], fresh: [forwarded: 1])
        #expect(raced == [.send(.ack(batchID: 2, heads: [forwarded: 4]))])
        _ = session.tick()
        let healed = deliver(
            events(forwarded, 5...6), id: 3, to: &session, cursor: [forwarded: 6], fresh: [forwarded: 2])
        #expect(healed == [.send(.ack(batchID: 3, heads: [forwarded: 6])), .send(.graft(origins: ["origin"]))])
        #expect(session.prunedOrigins.isEmpty)
    }

    @Test func aPrunedOriginGoesAtTheRoundOnceThePeerStillLacksIt() {
        var session = syncing(local: [forwarded: 5, mine: 1], peer: [forwarded: 5, mine: 1])
        #expect(session.receive(.prune(origins: ["origin", "me"])).isEmpty)
        #expect(session.originsPrunedByPeer == ["origin"])
        // Forwarded events wait; our own go at once.
        #expect(session.localCursorChanged([forwarded: 6, mine: 1]).isEmpty)
        let own = session.localCursorChanged([forwarded: 6, mine: 2])
        #expect(own == [.readEvents(ranges: [FeedRange(feed: mine, seqs: 2...2)], maxEvents: 5_000, maxBytes: 2 << 20)])
        _ = session.eventsRead(EventPage(events: events(mine, 2...2)))
        _ = session.receive(.ack(batchID: 1, heads: [mine: 2]))
        // The round: the peer's cursor came while event 6 was new to us, so
        // it may still be on its way to the peer over another link.
        #expect(session.receive(.cursor(VectorCursor())).isEmpty)
        // The next round: the peer still lacks it, so it goes.
        let round = session.receive(.cursor(VectorCursor()))
        #expect(
            round == [
                .readEvents(ranges: [FeedRange(feed: forwarded, seqs: 6...6)], maxEvents: 5_000, maxBytes: 2 << 20)
            ])
    }

    @Test func aPrunedOriginThePeerGotElsewhereIsNotSent() {
        var session = syncing(local: [forwarded: 5], peer: [forwarded: 5])
        _ = session.receive(.prune(origins: ["origin"]))
        _ = session.localCursorChanged([forwarded: 6])
        _ = session.receive(.cursor(VectorCursor()))
        #expect(session.receive(.cursor([forwarded: 6])).isEmpty)
    }

    @Test func aGraftSendsWhatThePeerLacksAtOnce() {
        var session = syncing(local: [forwarded: 5], peer: [forwarded: 5])
        _ = session.receive(.prune(origins: ["origin"]))
        #expect(session.localCursorChanged([forwarded: 7]).isEmpty)
        let graft = session.receive(.graft(origins: ["origin"]))
        #expect(
            graft == [
                .readEvents(ranges: [FeedRange(feed: forwarded, seqs: 6...7)], maxEvents: 5_000, maxBytes: 2 << 20)
            ])
        #expect(session.originsPrunedByPeer.isEmpty)
    }

    @Test func aForwardingPeerIsPrunedForEveryConnectedOriginAtOnce() {
        var session = syncing(local: [:], peer: [:])
        let batch = EventBatch(batchID: 1, events: events(forwarded, 1...1))
        _ = session.receive(.events(batch))
        let directives = session.ingested(
            batchID: 1, cursor: [forwarded: 1], batchFeeds: [forwarded], newEvents: [forwarded: 1],
            directOrigins: ["origin", "other", "peer", "me"])
        #expect(
            directives == [
                .send(.ack(batchID: 1, heads: [forwarded: 1])), .send(.prune(origins: ["origin", "other"])),
            ])
    }

    @Test func withoutPruningDuplicatesAreAcknowledgedAndPrunesIgnored() {
        var session = syncing(local: [forwarded: 3], peer: [forwarded: 3]) { $0.prunesLinks = false }
        let directives = deliver(events(forwarded, 2...3), id: 1, to: &session, cursor: [forwarded: 3], fresh: [:])
        #expect(directives == [.send(.ack(batchID: 1, heads: [forwarded: 3]))])
        #expect(session.receive(.prune(origins: ["origin"])).isEmpty)
        #expect(session.originsPrunedByPeer.isEmpty)
        let pushed = session.localCursorChanged([forwarded: 4])
        #expect(
            pushed == [
                .readEvents(ranges: [FeedRange(feed: forwarded, seqs: 4...4)], maxEvents: 5_000, maxBytes: 2 << 20)
            ])
    }

    @Test func withoutLivePushNothingIsPruned() {
        var session = syncing(local: [forwarded: 3], peer: [forwarded: 1]) { $0.livePush = false }
        let directives = deliver(events(forwarded, 2...3), id: 1, to: &session, cursor: [forwarded: 3], fresh: [:])
        #expect(directives == [.send(.ack(batchID: 1, heads: [forwarded: 3]))])
    }

    @Test func theOriginOfAThinClientFeedIsTheNodeThatFilesIt() {
        #expect(FeedID(replicaID: "phone@node-a").origin == "node-a")
        #expect(FeedID(replicaID: "node-a").origin == "node-a")
    }

    @Test func aRunOfBatchesCountsEachBatchsNewEvents() {
        let first = EventBatch(batchID: 1, events: events(forwarded, 1...3) + events(mine, 1...1))
        let second = EventBatch(batchID: 2, events: events(forwarded, 4...5))
        let stored = (first.events.dropFirst(2) + second.events.prefix(1)).enumerated().map {
            StoredEvent(event: $0.element, offset: Int64($0.offset + 1), arrivalTimeMs: 0)
        }
        let counts = SyncNode.newEvents(in: [first, second], stored: Array(stored))
        #expect(counts == [[forwarded: 1, mine: 1], [forwarded: 1]])
    }
}

/// `prune` and `graft` on the wire, declared like compression.
@Suite struct LinkPruningWireTests {
    @Test func pruneAndGraftRoundTrip() throws {
        var encoder = MessageEncoder(pruning: true)
        var decoder = MessageDecoder()
        for message in [Message.prune(origins: ["a", "phone@b"]), .graft(origins: ["a"])] {
            #expect(try decoder.decode(encoder.encode(message)) == message)
        }
    }

    @Test func theCapabilityGoesWithTheFirstDeclarationsAndOnlyThen() throws {
        var offering = MessageEncoder(pruning: true)
        var plain = MessageEncoder()
        var decoder = MessageDecoder()
        _ = try decoder.decode(offering.encode(.cursor(VectorCursor())))
        #expect(decoder.peerOffersPruning)
        var older = MessageDecoder()
        _ = try older.decode(plain.encode(.cursor([FeedID(replicaID: "a"): 1])))
        #expect(!older.peerOffersPruning)
        // A decoder keeps capability indexes apart from feeds: the next feed still decodes.
        let cursor: VectorCursor = [FeedID(replicaID: "a"): 3]
        #expect(try decoder.decode(offering.encode(.cursor(cursor))) == .cursor(cursor))
    }

    @Test func theBytesAreThoseOfTheProtocolDocument() {
        var encoder = MessageEncoder(compression: true, pruning: true)
        let capability = Array("peersync/capability".utf8)
        let cursor = encoder.encode(.cursor(VectorCursor()))
        let expected: [UInt8] =
            [2, 2, 0, 19] + capability + [4] + Array("zstd".utf8) + [1, 19] + capability + [5]
            + Array("prune".utf8) + [0]
        #expect(cursor == expected && cursor.count == 56)
        #expect(encoder.encode(.prune(origins: ["bench-a"])) == [9, 1, 7] + Array("bench-a".utf8))
        #expect(encoder.encode(.graft(origins: ["bench-a"])).first == 10)
    }

    @Test func neitherGoesToAPeerThatDidNotDeclareIt() {
        var encoder = MessageEncoder(pruning: true)
        #expect(!encoder.carries(.prune(origins: ["a"])) && !encoder.carries(.graft(origins: ["a"])))
        #expect(encoder.carries(.cursor(VectorCursor())))
        encoder.peerAcceptsPruning = true
        #expect(encoder.carries(.prune(origins: ["a"])))
    }

    @Test func anEmptyOriginIsRefused() throws {
        var writer = [UInt8]([9, 1, 0])
        var decoder = MessageDecoder()
        #expect(throws: WireError.self) { try decoder.decode(writer) }
        writer = [10, 0]
        #expect(try decoder.decode(writer) == .graft(origins: []))
        #expect(throws: WireError.unknownMessageType(20)) { try decoder.decode([20]) }
    }
}
