/// A feed's chain at a seq: what an incremental export's `base` line
/// carries and an import checks against (docs/events.md "Incremental exports").
extension EventLog {
    /// The chain link of `feed` at `seq` (at most its head), with the
    /// origin's signature there: the one held, or, for a feed this replica
    /// writes, its own (an origin signs any cut of its feeds).
    ///
    /// - Throws: `EventLogError.corrupt` when the feed lacks an event below `seq`.
    public func chainHead(of feed: FeedID, at seq: UInt64) throws -> SignedHead {
        try read {
            guard seq > 0, let row = try feedRowID(feed, create: false) else {
                return SignedHead(feed: feed, seq: seq, link: FeedChain.genesis, signature: nil)
            }
            let link = try link(of: feed, feedRow: row, at: seq)
            if let held = try signature(feedRow: row, seq: seq) {
                return SignedHead(feed: feed, seq: seq, link: held.link, signature: held.signature)
            }
            let own = feed.origin == replicaID ? sign(feed, seq: seq, link: link) : nil
            return own ?? SignedHead(feed: feed, seq: seq, link: link, signature: nil)
        }
    }
}
