import Foundation
import TestSupport
import Testing

@testable import Replica

/// Reading the log: arrival-order pages, pages for a peer, entity histories.
@Suite("Reads")
struct ReadTests {
    let directory: TemporaryDirectory
    let clock = ManualClock(1_000)

    init() throws {
        directory = try TemporaryDirectory()
    }

    /// A log holding its own feed of `ownCount` events and two remote feeds.
    private func populatedLog(ownCount: Int = 10) throws -> EventLog {
        let log = try EventLog.create(at: directory.path("a.db"), replicaID: "a", options: .testing(clock: clock))
        for index in 0..<ownCount {
            try log.append(
                NewEvent(item: "i\(index % 3)", .noteChanged(note: String(repeating: "x", count: index * 10))))
        }
        for replica in ["b", "c"] {
            let events = (1...6).map { seq in
                Fixtures.itemEvent(
                    replica, seq: UInt64(seq), time: Int64(500 + seq), item: "i\(seq % 4)",
                    .quantityChanged(quantity: Int64(seq)))
            }
            try log.ingest(events)
        }
        return log
    }

    @Test("Paging with events(after:limit:) returns every event once, in offset order")
    func pagingByOffsetSeesEverythingOnce() throws {
        let log = try populatedLog()
        var seen: [StoredEvent] = []
        var after: Int64 = 0
        var pageSizes: [Int] = []
        while true {
            let page = try log.events(after: after, limit: 4)
            if page.isEmpty { break }
            pageSizes.append(page.count)
            seen += page
            after = page.last!.offset
        }

        #expect(seen.count == 22)
        #expect(seen.map(\.offset) == Array(1...22))
        #expect(Set(seen.map(\.event.eventID)).count == 22)
        #expect(pageSizes.allSatisfy { $0 <= 4 })
        #expect(Int64(seen.count) == (try log.eventCount()))
    }

    @Test("Missing-event pages give exactly what the peer lacks, each feed in seq order")
    func missingPagesGiveExactlyWhatIsLacking() throws {
        let log = try populatedLog()
        let peer: VectorCursor = [FeedID(replicaID: "a"): 4, FeedID(replicaID: "b"): 6]

        var pages = try log.missingEventPages(for: peer, maxEvents: 3, maxBytes: 1 << 20)
        var received: [Event] = []
        while let page = try pages.next() {
            #expect(!page.isEmpty)
            #expect(page.count <= 3)
            received += page
        }

        let expected = try Fixtures.allEvents(log).map(\.event).filter { $0.seq > peer[$0.feed] }
        let mine = try log.cursor()
        #expect(received.count == expected.count)
        #expect(Set(received) == Set(expected))
        for feed in [FeedID(replicaID: "a"), FeedID(replicaID: "c")] {
            let seqs = received.filter { $0.feed == feed }.map(\.seq)
            #expect(seqs == Array((peer[feed] + 1)...mine[feed]), "feed \(feed)")
        }
        #expect(!received.contains { $0.feed.replicaID == "b" })
    }

    @Test("Missing-event pages stay within the byte budget and are never empty")
    func missingPagesRespectByteBudget() throws {
        let log = try populatedLog(ownCount: 12)
        let maxBytes = 400

        var pages = try log.missingEventPages(for: VectorCursor(), maxEvents: 100, maxBytes: maxBytes)
        var count = 0
        var pageCount = 0
        while let page = try pages.next() {
            pageCount += 1
            count += page.count
            #expect(!page.isEmpty)
            let bytes = page.reduce(0) { $0 + $1.payload.utf8.count + MissingEventPages.eventOverheadBytes }
            #expect(bytes <= maxBytes || page.count == 1, "a page of \(page.count) events holds \(bytes) bytes")
        }

        #expect(count == 24)
        #expect(pageCount > 24 / 3)
        #expect(pages.pending.isEmpty)
    }

    @Test("An event larger than the byte budget still travels, alone in its page")
    func oversizedEventTravelsAlone() throws {
        let log = try EventLog.create(at: directory.path("a.db"), replicaID: "a", options: .testing(clock: clock))
        try log.append(NewEvent(item: "i1", .noteChanged(note: "small")))
        try log.append(NewEvent(item: "i1", .noteChanged(note: String(repeating: "y", count: 5_000))))
        try log.append(NewEvent(item: "i1", .noteChanged(note: "small again")))

        var pages = try log.missingEventPages(for: VectorCursor(), maxEvents: 10, maxBytes: 1_000)
        var sizes: [Int] = []
        while let page = try pages.next() { sizes.append(page.count) }

        #expect(sizes == [1, 1, 1])
    }

    @Test("A peer that lacks nothing gets no page")
    func upToDatePeerGetsNothing() throws {
        let log = try populatedLog()
        var pages = try log.missingEventPages(for: try log.cursor())
        #expect(try pages.next() == nil)
    }

    @Test("A peer ahead of this replica gets no page")
    func peerAheadGetsNothing() throws {
        let log = try populatedLog()
        var pages = try log.missingEventPages(for: [
            FeedID(replicaID: "b"): 50, FeedID(replicaID: "a"): 10, FeedID(replicaID: "c"): 6,
        ])
        #expect(try pages.next() == nil)
    }

    @Test("An entity's events come back in canonical order")
    func entityEventsInCanonicalOrder() throws {
        let log = try EventLog.create(
            at: directory.path("a.db"), replicaID: "a", options: .testing(clock: ManualClock(300)))
        let tieID1 = UUID(uuidString: "00000000-0000-0000-0000-0000000000ff")!
        let tieID2 = UUID(uuidString: "a0000000-0000-0000-0000-000000000000")!
        try log.ingest([
            Fixtures.itemEvent("z", seq: 1, time: 200, item: "i1", .renamed(name: "late")),
            Fixtures.itemEvent("y", seq: 1, time: 100, item: "i1", .renamed(name: "tie, small id"), eventID: tieID1),
            Fixtures.itemEvent("x", seq: 1, time: 100, item: "i1", .renamed(name: "tie, large id"), eventID: tieID2),
            Fixtures.itemEvent("x", seq: 2, time: 100, item: "i1", .renamed(name: "tie, higher seq")),
            Fixtures.itemEvent("w", seq: 1, time: 50, item: "i1", .created(name: "first", quantity: 1)),
        ])
        try log.append(NewEvent(item: "i1", .renamed(name: "local")))

        let names = try log.events(entityType: Item.entityType, entityID: "i1").map { stored in
            try JSONDecoder().decode(ItemEvent.self, from: Data(stored.event.payload.utf8))
        }

        #expect(
            names == [
                .created(name: "first", quantity: 1), .renamed(name: "tie, small id"), .renamed(name: "tie, large id"),
                .renamed(name: "tie, higher seq"), .renamed(name: "late"), .renamed(name: "local"),
            ])
        #expect(try log.projection(Item.self, id: "i1")?.name == "local")
    }

    @Test("An entity without events has an empty history")
    func unknownEntityHasNoEvents() throws {
        let log = try populatedLog()
        #expect(try log.events(entityType: Item.entityType, entityID: "nope").isEmpty)
    }

    @Test("forEachEventPage visits every event once, in arrival order, in pages of the given size")
    func forEachEventPageVisitsEverything() throws {
        let log = try populatedLog()
        var pageSizes: [Int] = []
        var offsets: [Int64] = []
        try log.forEachEventPage(pageSize: 7) { page in
            pageSizes.append(page.count)
            offsets += page.map(\.offset)
        }
        #expect(offsets == Array(1...22))
        #expect(pageSizes == [7, 7, 7, 1])
    }

    @Test("Pages in canonical order merge feeds by time, keep each feed in seq order and resume exactly")
    func canonicalOrderPagesMergeFeeds() throws {
        let log = try EventLog.create(at: directory.path("m.db"), replicaID: "m", options: .testing(clock: clock))
        // Three feeds whose times interleave: b at 1, 4, 7, ...; c at 2, 5, 8, ...; d at 3, 6, 9, ...
        for (offset, replica) in ["b", "c", "d"].enumerated() {
            let events = (1...200).map { seq in
                Fixtures.itemEvent(
                    replica, seq: UInt64(seq), time: Int64(3 * seq - 2 + offset), item: "i\(seq % 7)",
                    .quantityChanged(quantity: Int64(seq)))
            }
            try log.ingest(events)
        }
        var sent: [FeedID: UInt64] = [:]
        var all: [Event] = []
        while true {
            let ranges = ["b", "c", "d"].map { FeedID(replicaID: $0) }
                .filter { (sent[$0] ?? 0) < 200 }
                .map { ($0, ((sent[$0] ?? 0) + 1)...200) }
            if ranges.isEmpty { break }
            let page = try log.eventsInCanonicalOrder(of: ranges, maxEvents: 50, maxBytes: 1 << 20)
            try #require(!page.isEmpty)
            #expect(page.count <= 50)
            for event in page {
                #expect(event.seq == (sent[event.feed] ?? 0) + 1, "each feed continues in seq order")
                sent[event.feed] = event.seq
            }
            all += page
        }
        #expect(all.count == 600)
        #expect(all.map(\.timeMs) == Array(1...600).map(Int64.init), "one canonical order across feeds")
    }

    @Test("A page stays full when one feed's events all sort first: the others are read on, not cut short")
    func canonicalOrderPagesFillWhenFeedsAreSkewed() throws {
        let log = try EventLog.create(at: directory.path("s.db"), replicaID: "s", options: .testing(clock: clock))
        // Four feeds of 300 events; b's all sort before c's, c's before d's, d's before e's.
        for (offset, replica) in ["b", "c", "d", "e"].enumerated() {
            let events = (1...300).map { seq in
                Fixtures.itemEvent(
                    replica, seq: UInt64(seq), time: Int64(offset * 1_000 + seq), item: "i\(seq % 5)",
                    .quantityChanged(quantity: Int64(seq)))
            }
            try log.ingest(events)
        }
        let ranges = ["b", "c", "d", "e"].map { (FeedID(replicaID: $0), UInt64(1)...300) }
        let page = try log.eventsInCanonicalOrder(of: ranges, maxEvents: 400, maxBytes: 1 << 20)
        #expect(page.count == 400, "the page is cut only by its limits")
        #expect(page.map(\.timeMs) == Array(1...300).map(Int64.init) + Array(1_001...1_100).map(Int64.init))
    }
}
