import Foundation
import Replica
import Testing

@testable import SyncProtocol

/// A run the peer acknowledges without taking it (it could not verify it)
/// goes again only when something may let it take it: our head of the feed
/// moves, or certificates cross the connection (docs/protocol.md "Runs a
/// peer declined"). Never every round.
@Suite struct DeclinedRunTests {
    let feed = FeedID(replicaID: "origin")

    /// A session that sent `1...3` of `feed` and got an ack that left the peer at 0.
    func declined() -> SyncSession {
        var (session, directives) = SessionFixtures.syncing(local: [feed: 3], peer: [:])
        #expect(directives.count == 1)
        let sent = session.eventsRead(EventPage(events: SessionFixtures.events(feed, 1...3)))
        #expect(sent.contains { if case .send(.events) = $0 { true } else { false } })
        #expect(session.receive(.ack(batchID: 1, heads: [:])).isEmpty)
        #expect(session.declinedFeeds == [feed])
        return session
    }

    func reads(_ directives: [SyncSession.Directive]) -> [ClosedRange<UInt64>] {
        directives.flatMap { directive -> [ClosedRange<UInt64>] in
            guard case .readEvents(let ranges, _, _) = directive else { return [] }
            return ranges.filter { $0.feed == feed }.map(\.seqs)
        }
    }

    @Test func aDeclinedRunIsNotSentAgainAtTheRound() {
        var session = declined()
        #expect(reads(session.tick()).isEmpty)
        #expect(reads(session.receive(.cursor([:]))).isEmpty)
        #expect(session.progress.toSend == 3, "the peer still lacks the feed")
    }

    @Test func certificatesCrossingTheConnectionSendTheRunAgainFromWhatThePeerHolds() {
        var session = declined()
        #expect(reads(session.certificatesExchanged()) == [1...3])
        #expect(session.declinedFeeds.isEmpty)
        // Taken this time: nothing is declined, and nothing goes a third time.
        _ = session.eventsRead(EventPage(events: SessionFixtures.events(feed, 1...3)))
        #expect(session.receive(.ack(batchID: 2, heads: [feed: 3])).isEmpty)
        #expect(session.declinedFeeds.isEmpty && reads(session.certificatesExchanged()).isEmpty)
    }

    @Test func ourHeadOfTheFeedMovingSendsItAgainFromWhatThePeerHolds() {
        var session = declined()
        #expect(reads(session.localCursorChanged([feed: 4])) == [1...4])
    }

    @Test func anotherFeedMovingLeavesTheDeclinedOneWaiting() {
        var session = declined()
        let other = FeedID(replicaID: "other")
        let directives = session.localCursorChanged([feed: 3, other: 1])
        #expect(reads(directives).isEmpty)
        #expect(session.declinedFeeds == [feed])
    }

    @Test func anAckThatTakesTheRunLaterClearsTheDecline() {
        var session = declined()
        _ = session.localCursorChanged([feed: 4])
        _ = session.eventsRead(EventPage(events: SessionFixtures.events(feed, 1...4)))
        #expect(session.receive(.ack(batchID: 2, heads: [feed: 4])).isEmpty)
        #expect(session.declinedFeeds.isEmpty)
    }
}

/// A verifying node never sends a run that no signature it holds covers
/// (a forwarded feed mid-import): it holds it back as declined.
@Suite struct UnprovenRunTests {
    let feed = FeedID(replicaID: "origin")

    func page(_ range: ClosedRange<UInt64>, signed: Bool) -> EventPage {
        let head = SignedHead(
            feed: feed, seq: range.upperBound, link: FeedChain.genesis,
            signature: signed ? [UInt8](repeating: 1, count: 64) : nil)
        return EventPage(
            events: SessionFixtures.events(feed, range),
            proofs: [feed: FeedProof(baseLink: FeedChain.genesis, head: head)])
    }

    func sends(_ directives: [SyncSession.Directive]) -> Bool {
        directives.contains { if case .send(.events) = $0 { true } else { false } }
    }

    @Test func anUnsignedRunIsHeldBackUntilTheFeedMovesAndGoesOnceItIsSigned() {
        var (session, _) = SessionFixtures.syncing(local: [feed: 3], peer: [:]) { $0.sendsOnlyProvenRuns = true }
        let held = session.eventsRead(page(1...3, signed: false))
        #expect(!sends(held) && held.isEmpty, "no batch, and no read of the same run again")
        #expect(session.declinedFeeds == [feed])
        #expect(session.tick().allSatisfy { if case .readEvents = $0 { false } else { true } })
        // The rest of the import commits with the signed head: the feed goes, from what the peer holds.
        let read = session.localCursorChanged([feed: 5])
        #expect(
            read.contains { if case .readEvents(let ranges, _, _) = $0 { ranges.first?.seqs == 1...5 } else { false } })
        #expect(sends(session.eventsRead(page(1...5, signed: true))))
    }

    @Test func anUnsignedRunHeldBackGoesOnceAnotherProcessStoresItsSignatureWithoutNewEvents() {
        var (session, _) = SessionFixtures.syncing(local: [feed: 3], peer: [:]) { $0.sendsOnlyProvenRuns = true }
        #expect(session.eventsRead(page(1...3, signed: false)).isEmpty)
        #expect(session.localCursorChanged([feed: 3]).isEmpty, "the cursor did not move: still held back")
        // An import adopts the signed head of the events held: same cursor, a proof now.
        let read = session.signaturesStored()
        #expect(
            read.contains { if case .readEvents(let ranges, _, _) = $0 { ranges.first?.seqs == 1...3 } else { false } },
            "\(read)")
        #expect(session.declinedFeeds.isEmpty)
        #expect(sends(session.eventsRead(page(1...3, signed: true))))
    }

    @Test func aFeedThatGrewWhileItsUnsignedPageWasReadIsReadAgainNotHeldBack() {
        var (session, _) = SessionFixtures.syncing(local: [feed: 3], peer: [:]) { $0.sendsOnlyProvenRuns = true }
        // The import's last batch, with the signed head, commits while the page of its first is read.
        #expect(session.localCursorChanged([feed: 5]).isEmpty, "a read is pending")
        let again = session.eventsRead(page(1...3, signed: false))
        #expect(!sends(again))
        #expect(
            again.contains {
                if case .readEvents(let ranges, _, _) = $0 { ranges.first?.seqs == 1...5 } else { false }
            },
            "read again from what the peer holds, not held back: \(again)")
        #expect(session.declinedFeeds.isEmpty)
        #expect(sends(session.eventsRead(page(1...5, signed: true))))
    }

    @Test func certificatesThatCrossWhileAnUnsignedPageIsReadMakeItBeReadAgainNotHeldBack() {
        var (session, _) = SessionFixtures.syncing(local: [feed: 3], peer: [:]) { $0.sendsOnlyProvenRuns = true }
        // The import's last transaction brings the certificates and signatures, not more events.
        #expect(session.certificatesExchanged().isEmpty, "a read is pending")
        let again = session.eventsRead(page(1...3, signed: false))
        #expect(
            again.contains {
                if case .readEvents(let ranges, _, _) = $0 { ranges.first?.seqs == 1...3 } else { false }
            },
            "read again, not held back: \(again)")
        #expect(session.declinedFeeds.isEmpty)
        #expect(sends(session.eventsRead(page(1...3, signed: true))))
    }

    @Test func withoutTheSettingAnUnsignedRunGoesAsBefore() {
        var (session, _) = SessionFixtures.syncing(local: [feed: 3], peer: [:])
        #expect(sends(session.eventsRead(page(1...3, signed: false))))
    }
}

/// The refusals a node keeps for `GET /status`: one per feed and peer, over
/// once events of the feed are stored.
@Suite struct FeedRefusalsTests {
    let feed = FeedID(replicaID: "origin")

    @Test func refusalsAddUpPerFeedAndPeerAndEndWhenTheFeedIsStored() {
        var refusals = FeedRefusals()
        let run = RefusedRun(feed: feed, count: 2, reason: .noKey(origin: "origin"))
        refusals.note(run, from: "a", now: 10)
        refusals.note(run, from: "a", now: 20)
        refusals.note(RefusedRun(feed: feed, count: 1, reason: .unsignedHead), from: "b", now: 30)
        #expect(refusals.all.count == 2)
        #expect(refusals.all[0].events == 4 && refusals.all[0].sinceMs == 10 && refusals.all[0].lastMs == 20)
        #expect(refusals.countsByReason["no_key"] == 1 && refusals.countsByReason["unsigned"] == 1)
        #expect(refusals.countsByReason["bad_signature"] == 0)
        #expect(refusals.all[0].message.hasPrefix("refused 4 event(s) of feed origin/default from peer a: "))
        #expect(refusals.all[0].message.contains("no certificate of origin has reached this replica"))
        refusals.resolve([FeedID(replicaID: "other")])
        #expect(refusals.all.count == 2)
        refusals.resolve([feed])
        #expect(refusals.all.isEmpty)
    }

    @Test func theOldestRefusalGoesPastTheLimit() {
        var refusals = FeedRefusals()
        for index in 0...FeedRefusals.limit {
            refusals.note(
                RefusedRun(feed: FeedID(replicaID: "r\(index)"), count: 1, reason: .noProof), from: "a",
                now: Int64(index))
        }
        #expect(refusals.all.count == FeedRefusals.limit)
        #expect(refusals.all.first?.feed == FeedID(replicaID: "r1"))
    }
}
