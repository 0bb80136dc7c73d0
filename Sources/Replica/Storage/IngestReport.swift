import Foundation

/// What one remote ingest did.
public struct IngestReport: Sendable {
    /// The events stored by this ingest, in arrival order.
    public var stored: [StoredEvent] = []
    /// Events this replica already held (same slot, same event id).
    public var duplicates = 0
    /// Offered events that collide with a held one; quarantined, not stored.
    public var forks: [Fork] = []
    /// Feeds whose offered events skipped a seq; those events were not stored.
    public var gaps: [FeedGap] = []
    /// Events that break the event model; quarantined, and their feed stops there.
    public var invalid: [InvalidEvent] = []
    /// Per origin replica, how far (ms) its newest event was ahead of the
    /// wall clock beyond the tolerated skew; such times do not move the clock.
    public var clockSkewMs: [String: Int64] = [:]
    /// Signed runs refused whole: not signed by the origin, altered, or not one run.
    public var refused: [RefusedRun] = []
    /// Feeds found forked by this ingest, with the proof; quarantined from now on.
    public var forkProofs: [ForkProof] = []
    /// Offered events of feeds quarantined before this ingest, per feed; not stored.
    public var refusedForked: [FeedID: Int] = [:]
    /// Verified events written at or after their origin's revocation
    /// (`FeedKeys.validBeforeMs`); not stored.
    public var refusedRevoked = 0

    public init() {}

    /// True when every offered event is now held.
    public var isComplete: Bool {
        forks.isEmpty && gaps.isEmpty && invalid.isEmpty && refused.isEmpty && forkProofs.isEmpty
            && refusedForked.isEmpty
    }
}

/// One feed's events of a batch that failed verification; none was stored.
public struct RefusedRun: Sendable, Hashable, CustomStringConvertible {
    public var feed: FeedID
    /// How many events of the feed the batch offered.
    public var count: Int
    public var reason: String

    public var description: String { "refused \(count) event(s) of feed \(feed): \(reason)" }
}

/// Two different events claim the same feed slot.
public struct Fork: Sendable, Hashable, CustomStringConvertible {
    public var feed: FeedID
    public var seq: UInt64
    /// The event this replica holds and keeps.
    public var heldEventID: UUID
    /// The offered event, quarantined.
    public var offeredEventID: UUID

    public var description: String {
        "fork in feed \(feed) at seq \(seq): holding \(heldEventID.lowercased), "
            + "quarantined \(offeredEventID.lowercased)"
    }
}

/// Offered events of a feed began past the next expected seq.
public struct FeedGap: Sendable, Hashable, CustomStringConvertible {
    public var feed: FeedID
    /// The seq this replica needs next.
    public var expectedSeq: UInt64
    /// The first seq offered past it.
    public var offeredSeq: UInt64
    /// How many offered events of the feed were not stored.
    public var rejectedCount: Int

    public var description: String {
        "gap in feed \(feed): need seq \(expectedSeq), offered \(offeredSeq); \(rejectedCount) event(s) not stored"
    }
}

/// An offered event that breaks the event model.
public struct InvalidEvent: Sendable, Hashable, CustomStringConvertible {
    public var feed: FeedID
    public var seq: UInt64
    public var reason: String

    public var description: String { "invalid event \(feed) seq \(seq): \(reason)" }
}
