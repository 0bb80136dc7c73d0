import Gossip
import Replica
import SyncProtocol

/// Over how many transfers each event reached each replica: 0 where it was
/// appended, one more than the sender's count where a batch brought it.
/// The depth of the spread, whatever the timing of the rounds.
struct HopTracker {
    private struct Slot: Hashable {
        var feed: FeedID
        var seq: UInt64
    }

    private var hops: [[Slot: Int]]

    init(replicaCount: Int) {
        hops = Array(repeating: [:], count: replicaCount)
    }

    mutating func appended(_ event: Event, at replica: Int) {
        hops[replica][Slot(feed: event.feed, seq: event.seq)] = 0
    }

    /// A batch from `sender` was delivered to `receiver`, whose cursor went
    /// from `before` to `after`: the events it newly holds came this way.
    mutating func delivered(
        _ batch: EventBatch, from sender: Int, to receiver: Int, before: VectorCursor, after: VectorCursor
    ) {
        for event in batch.events where before[event.feed] < event.seq && event.seq <= after[event.feed] {
            let slot = Slot(feed: event.feed, seq: event.seq)
            hops[receiver][slot] = (hops[sender][slot] ?? 0) + 1
        }
    }

    var summary: HopSummary {
        let all = hops.flatMap(\.values)
        return HopSummary(
            maxHops: all.max() ?? 0, meanHops: all.isEmpty ? 0 : Double(all.reduce(0, +)) / Double(all.count))
    }
}

/// How deep the spread went, over every event at every replica.
public struct HopSummary: Sendable, Hashable {
    /// The most transfers any event needed to reach any replica.
    public var maxHops: Int
    public var meanHops: Double
}
