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
    public var reason: RefusalReason

    public init(feed: FeedID, count: Int, reason: RefusalReason) {
        self.feed = feed
        self.count = count
        self.reason = reason
    }

    public var description: String { "refused \(count) event(s) of feed \(feed): \(reason)" }
}

/// Why a feed's run was refused by verification (docs/protocol.md "Signed feeds").
public enum RefusalReason: Sendable, Hashable, CustomStringConvertible {
    /// The batch carried no proof for the feed.
    case noProof
    /// The head that came with the run is not signed (its sender holds no signature there).
    case unsignedHead
    /// No identity key is known for the feed's origin: no certificate of it reached this replica.
    case noKey(origin: String)
    /// The events are not one run of seqs ending at the signed head's seq.
    case notOneRun(headSeq: UInt64)
    /// An event of the run breaks the event model.
    case invalidEvent(seq: UInt64, reason: String)
    /// The chain does not end at the head, or the head's signature is by no key known for the origin.
    case badSignature(origin: String)

    /// A short name for metrics and JSON: `no_proof`, `unsigned`, `no_key`,
    /// `not_one_run`, `invalid`, `bad_signature`.
    public var code: String {
        switch self {
        case .noProof: "no_proof"
        case .unsignedHead: "unsigned"
        case .noKey: "no_key"
        case .notOneRun: "not_one_run"
        case .invalidEvent: "invalid"
        case .badSignature: "bad_signature"
        }
    }

    /// Every code, in a fixed order (for a metric's labels).
    public static let codes = ["no_proof", "unsigned", "no_key", "not_one_run", "invalid", "bad_signature"]

    public var description: String {
        switch self {
        case .noProof: "no signed head came with them"
        case .unsignedHead: "their head is not signed"
        case .noKey(let origin): "no identity key is known for \(origin)"
        case .notOneRun(let seq): "they are not one run ending at the signed head \(seq)"
        case .invalidEvent(let seq, let reason): "seq \(seq) is invalid: \(reason)"
        case .badSignature(let origin):
            "the origin's signature does not cover them (altered, or not signed by \(origin))"
        }
    }

    /// What would let this replica take the feed, for a person reading `peerd status`.
    public var remedy: String {
        switch self {
        case .noKey(let origin):
            "no certificate of \(origin) has reached this replica: connect it to a replica that holds one "
                + "(\(origin) itself, or one that imported an export of it), or import an export of "
                + "\(origin)'s feed (the file carries the certificate); in a cluster with an admin key, "
                + "\(origin) needs a certificate from that admin (`peerd invite`)"
        case .noProof, .unsignedHead, .notOneRun:
            "the sending replica holds no signature for where these events end; they are taken from a replica "
                + "that does (the origin, or one that received them signed), and from this peer once it does"
        case .invalidEvent:
            "the event is quarantined (`peerd check`); the feed stops before it on this replica"
        case .badSignature:
            "the sending replica's copy of the feed was altered, or another key signed it; the origin's own "
                + "copy is taken from any replica that holds it unaltered"
        }
    }
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
