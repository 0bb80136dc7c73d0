import Replica
import Testing

@testable import SyncProtocol

/// What a node keeps of its newest events, and which reads it answers.
@Suite struct RecentEventsTests {
    private let feed = FeedID(replicaID: "a")
    private let unlimited = (events: RecentEvents.eventsPerFeed, bytes: 1 << 20)

    private func page(_ recent: RecentEvents, _ seqs: ClosedRange<UInt64>, of feed: FeedID? = nil) -> [UInt64]? {
        recent.page(
            for: [FeedRange(feed: feed ?? self.feed, seqs: seqs)], maxEvents: unlimited.events,
            maxBytes: unlimited.bytes, proven: false)?.events.map(\.seq)
    }

    @Test func aHeldRunAnswersAnyRangeInsideIt() {
        var recent = RecentEvents()
        recent.remember(SessionFixtures.events(feed, 1...5))
        #expect(page(recent, 1...5) == [1, 2, 3, 4, 5])
        #expect(page(recent, 3...4) == [3, 4])
        #expect(page(recent, 5...6) == nil)  // past the run
        #expect(page(recent, 1...1, of: FeedID(replicaID: "b")) == nil)
    }

    @Test func aGapStartsANewRunAndOlderEventsAreIgnored() {
        var recent = RecentEvents()
        recent.remember(SessionFixtures.events(feed, 1...3))
        recent.remember(SessionFixtures.events(feed, 6...7))
        #expect(page(recent, 6...7) == [6, 7])
        #expect(page(recent, 3...3) == nil)  // the run before the gap is gone
        recent.remember(SessionFixtures.events(feed, 2...2))
        #expect(page(recent, 6...7) == [6, 7])
    }

    @Test func eachFeedKeepsItsNewestEventsAndTheOldestFeedGoesFirst() {
        var recent = RecentEvents()
        // Past a quarter over the limit, the run is cut back to the newest `eventsPerFeed`.
        let total = UInt64(RecentEvents.eventsPerFeed * 5 / 4 + 1)
        recent.remember(SessionFixtures.events(feed, 1...total))
        #expect(page(recent, 1...1) == nil)
        let newest = (total - UInt64(RecentEvents.eventsPerFeed) + 1)...total
        #expect(page(recent, newest)?.count == RecentEvents.eventsPerFeed)
        let others = (0..<RecentEvents.feeds).map { FeedID(replicaID: "r\($0)") }
        for other in others { recent.remember(SessionFixtures.events(other, 1...1)) }
        #expect(page(recent, total...total) == nil)  // written longest ago: evicted
        #expect(page(recent, 1...1, of: others.last) == [1])
    }

    @Test func aPageOverTheLimitsOrOverSeveralFeedsIsLeftToTheLog() {
        var recent = RecentEvents()
        recent.remember(SessionFixtures.events(feed, 1...4))
        let b = FeedID(replicaID: "b")
        recent.remember(SessionFixtures.events(b, 1...4))
        let range = FeedRange(feed: feed, seqs: 1...4)
        #expect(recent.page(for: [range], maxEvents: 3, maxBytes: 1 << 20, proven: false) == nil)
        #expect(recent.page(for: [range], maxEvents: 4, maxBytes: 200, proven: false) == nil)
        #expect(
            recent.page(for: [FeedRange(feed: feed, seqs: 1...1)], maxEvents: 1, maxBytes: 1, proven: false)?.events
                .count == 1)
        #expect(
            recent.page(
                for: [range, FeedRange(feed: b, seqs: 1...4)], maxEvents: 512, maxBytes: 1 << 20, proven: false) == nil)
    }
}
