import Testing

@testable import Replica

/// Vector cursors and what one side lacks.
@Suite("Vector cursor")
struct VectorCursorTests {
    private let a = FeedID(replicaID: "a")
    private let b = FeedID(replicaID: "b")
    private let c = FeedID(replicaID: "c", scope: "shared")

    @Test("An absent feed reads as 0")
    func absentFeedIsZero() {
        #expect(VectorCursor()[a] == 0)
    }

    @Test("Setting a feed to 0 removes it")
    func zeroRemovesFeed() {
        var cursor: VectorCursor = [a: 3]
        cursor[a] = 0
        #expect(cursor == VectorCursor())
        #expect(cursor.feeds.isEmpty)
        #expect(VectorCursor(heads: [a: 0]) == VectorCursor())
    }

    @Test("missing(from:) lists the ranges the other side holds beyond this one")
    func missingRanges() {
        let mine: VectorCursor = [a: 5, b: 2]
        let theirs: VectorCursor = [a: 3, b: 7, c: 4]
        #expect(mine.missing(from: theirs) == [b: 3...7, c: 1...4])
        #expect(theirs.missing(from: mine) == [a: 4...5])
    }

    @Test("missingCount counts the events in the missing ranges")
    func missingCount() {
        let mine: VectorCursor = [a: 5, b: 2]
        let theirs: VectorCursor = [a: 3, b: 7, c: 4]
        #expect(mine.missingCount(from: theirs) == 9)
        #expect(theirs.missingCount(from: mine) == 2)
    }

    @Test("Equal cursors lack nothing from each other")
    func equalCursorsLackNothing() {
        let cursor: VectorCursor = [a: 5, c: 1]
        #expect(cursor.missing(from: cursor).isEmpty)
        #expect(cursor.missingCount(from: cursor) == 0)
    }

    @Test("Feeds are listed in (replica id, scope) order and counted")
    func feedsAndEventCount() {
        let cursor: VectorCursor = [c: 4, b: 2, a: 1, FeedID(replicaID: "a", scope: "x"): 3]
        #expect(cursor.feeds == [a, FeedID(replicaID: "a", scope: "x"), b, c])
        #expect(cursor.eventCount == 10)
    }

    @Test("A literal with a repeated feed keeps the higher head")
    func literalKeepsMax() {
        let cursor: VectorCursor = [a: 2, a: 9]
        #expect(cursor[a] == 9)
    }
}
