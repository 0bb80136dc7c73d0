import Replica

/// A feed this node refused from a peer because it could not verify the
/// events: what `GET /status` and `/peers` show and the metrics count
/// (docs/http-api.md, "refused_feeds"). It stands until events of the feed
/// are stored here, from whichever peer or file.
///
/// ```swift
/// let refusal = node.refusedFeeds.first!
/// print(refusal.message)   // "refused 2 event(s) of feed O/default from peer B: no identity key is known for O; …"
/// ```
public struct FeedRefusal: Sendable, Hashable {
    public var feed: FeedID
    /// The replica that sent the events.
    public var peer: String
    public var reason: RefusalReason
    /// Events of the feed refused from that peer since the refusal began.
    public var events: Int
    /// When the refusal began and when it last happened, on the node's clock.
    public var sinceMs: Milliseconds
    public var lastMs: Milliseconds

    /// One sentence a person can act on: the feed, the peer, why, and what would fix it.
    public var message: String {
        "refused \(events) event(s) of feed \(feed) from peer \(peer): \(reason); \(reason.remedy)"
    }
}

/// The refusals a node holds, one per feed and peer, bounded.
struct FeedRefusals: Sendable {
    /// At most this many are kept; the oldest goes first.
    static let limit = 1_024

    private(set) var all: [FeedRefusal] = []

    /// A refused run from `peer` at `now`.
    mutating func note(_ run: RefusedRun, from peer: String, now: Milliseconds) {
        if let index = all.firstIndex(where: { $0.feed == run.feed && $0.peer == peer }) {
            all[index].events += run.count
            all[index].reason = run.reason
            all[index].lastMs = now
            return
        }
        if all.count >= Self.limit { all.removeFirst() }
        all.append(
            FeedRefusal(feed: run.feed, peer: peer, reason: run.reason, events: run.count, sinceMs: now, lastMs: now))
    }

    /// Events of `feeds` were stored here: their refusals are over.
    mutating func resolve(_ feeds: Set<FeedID>) {
        guard !feeds.isEmpty, !all.isEmpty else { return }
        all.removeAll { feeds.contains($0.feed) }
    }

    /// Refusals by reason code (`RefusalReason.code`), every code present.
    var countsByReason: [String: Int] {
        var counts = Dictionary(uniqueKeysWithValues: RefusalReason.codes.map { ($0, 0) })
        for refusal in all { counts[refusal.reason.code, default: 0] += 1 }
        return counts
    }
}

extension SyncNode {
    /// The feeds this node refused from peers and holds no events of since,
    /// in feed order, then by peer.
    public var refusedFeeds: [FeedRefusal] {
        refusals.all.sorted { ($0.feed, $0.peer) < ($1.feed, $1.peer) }
    }
}
