/// A feed's chain at a seq: what an incremental export's `base` line
/// carries and an import checks against (docs/events.md "Incremental exports").
extension EventLog {
    /// The chain link of `feed` at `seq` (at most its head), with the
    /// origin's signature there when one is held.
    ///
    /// - Throws: `EventLogError.corrupt` when the feed lacks an event below `seq`.
    public func chainHead(of feed: FeedID, at seq: UInt64) throws -> SignedHead {
        try read {
            guard seq > 0, let row = try feedRowID(feed, create: false) else {
                return SignedHead(feed: feed, seq: seq, link: FeedChain.genesis, signature: nil)
            }
            let link = try link(of: feed, feedRow: row, at: seq)
            return SignedHead(
                feed: feed, seq: seq, link: link, signature: try signature(feedRow: row, seq: seq)?.signature)
        }
    }
}
