/// What an export carries of each feed's chain (docs/events.md "Signed
/// exports"): the signed points it holds, so that an import keeps them as
/// its batches commit, and the link at an incremental export's base.
extension EventLog {
    /// Every signed head this replica holds of `feed` (its points and its
    /// head, when signed), in seq order; none for a forked feed.
    ///
    /// ```swift
    /// for point in try log.signedPoints(of: feed) { print(point.seq) }   // 256, 512, …, the head
    /// ```
    public func signedPoints(of feed: FeedID) throws -> [SignedHead] {
        try read {
            guard let row = try feedRowID(feed, create: false), try !isForked(feedRow: row) else { return [] }
            let statement = try db.statement(
                "SELECT seq, link, signature FROM feed_signatures WHERE feed = ? ORDER BY seq")
            try statement.bind([.int(row)])
            var points: [SignedHead] = []
            while try statement.step() {
                points.append(
                    SignedHead(
                        feed: feed, seq: UInt64(statement.int64(0)), link: statement.blob(1),
                        signature: statement.blob(2)))
            }
            let head = try headSeq(feedRow: row)
            if points.last?.seq != head, let signed = try signature(feedRow: row, seq: head) {
                points.append(SignedHead(feed: feed, seq: head, link: signed.link, signature: signed.signature))
            }
            return points
        }
    }

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
