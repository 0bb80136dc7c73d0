import Replica

/// A feed a peer announced over a link where we pruned its origin, beyond
/// what we held: the eager link should bring it within `graftAfterMs`.
struct AwaitedFeed: Sendable {
    /// Our head of the feed when the wait began.
    var heldAt: UInt64
    var since: Milliseconds
}

extension SyncNode {
    /// A peer's cursor message arrived: the feeds it announces beyond our
    /// head over a link where we pruned their origin are awaited from the
    /// eager links (Plumtree's "i have" and its timer).
    mutating func awaitPrunedFeeds(_ announced: VectorCursor, on id: ConnectionID, now: Milliseconds) {
        guard configuration.session.prunesLinks, let session = sessions[id] else { return }
        for (feed, _) in announced.heads
        where awaited[feed] == nil && session.awaitsOverPrunedLink(feed, beyond: cursor[feed]) {
            awaited[feed] = AwaitedFeed(heldAt: cursor[feed], since: now)
        }
    }

    /// When the oldest awaited feed is due to be checked.
    var nextGraftCheck: Milliseconds? {
        awaited.values.lazy.map(\.since).min().map { $0 + configuration.graftAfterMs }
    }

    /// The awaited feeds whose time is up: one that made no progress at all
    /// has lost its tree link, so its origin is grafted on the first pruned
    /// link that holds more of it; one that moved (a catch-up under way) is
    /// awaited again, and one no pruned link is ahead of any more is done.
    mutating func graftLostLinks(now: Milliseconds) -> [Effect] {
        var effects: [Effect] = []
        let ids = sessions.keys.sorted()
        for feed in awaited.keys.sorted() {
            guard let wait = awaited[feed], now - wait.since >= configuration.graftAfterMs else { continue }
            let head = cursor[feed]
            guard let ahead = ids.first(where: { sessions[$0]!.awaitsOverPrunedLink(feed, beyond: head) }) else {
                awaited[feed] = nil
                continue
            }
            awaited[feed] = AwaitedFeed(heldAt: head, since: now)
            guard head == wait.heldAt else { continue }
            emit(
                LogRecord(
                    .debug, .linkGrafted, "tree link lost, grafting",
                    [("feed", feed.description), ("conn", "\(ahead)"), ("held", "\(head)")]))
            effects += perform(sessions[ahead]!.graft(feed.origin), on: ahead, now: now)
        }
        return effects
    }
}
