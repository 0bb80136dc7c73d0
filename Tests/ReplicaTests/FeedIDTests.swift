import Replica
import Testing

/// A feed id is its two ids' UTF-8 bytes: equal, hashed and ordered by them,
/// also after either id is changed in place.
@Suite struct FeedIDTests {
    @Test func idsThatDifferOnlyInNormalizationAreTwoFeeds() {
        let composed = FeedID(replicaID: "caf\u{E9}")
        let decomposed = FeedID(replicaID: "cafe\u{301}")
        #expect(composed != decomposed)
        #expect(Set([composed, decomposed]).count == 2)
    }

    @Test func aFeedChangedInPlaceHashesAndComparesAsItsNewIDs() {
        var feed = FeedID(replicaID: "a", scope: "team")
        var cursor: [FeedID: UInt64] = [FeedID(replicaID: "b", scope: "ops"): 7]
        #expect(cursor[feed] == nil)
        feed.replicaID = "b"
        #expect(feed != FeedID(replicaID: "b", scope: "ops"))
        feed.scope = "ops"
        #expect(feed == FeedID(replicaID: "b", scope: "ops"))
        #expect(cursor[feed] == 7)
        cursor[feed] = 8
        #expect(cursor.count == 1)
    }
}
