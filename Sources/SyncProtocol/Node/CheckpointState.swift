import Replica

/// When a replica drops the events a checkpoint covers, once every member
/// acknowledged it (docs/operations.md "Dropping history").
public enum HistoryRetention: Hashable, Sendable, CustomStringConvertible {
    /// Never: every event stays (the default).
    case everything
    /// Once the checkpoint is this many days old.
    case days(Int)

    /// `all`, or a number of days with `d` (`0d`, `30d`).
    public init?(_ text: String) {
        if text == "all" {
            self = .everything
        } else if text.hasSuffix("d"), let days = Int(text.dropLast()), days >= 0 {
            self = .days(days)
        } else {
            return nil
        }
    }

    public var description: String {
        switch self {
        case .everything: "all"
        case .days(let days): "\(days)d"
        }
    }

    /// How long a checkpoint must be old before its history goes; nil: never.
    var keepMs: Milliseconds? {
        switch self {
        case .everything: nil
        case .days(let days): Milliseconds(days) * 86_400_000
        }
    }
}

/// A checkpoint this replica refused, as `/status` shows it.
public struct RefusedCheckpoint: Hashable, Sendable {
    public enum Cause: String, Sendable {
        /// Recomputed from this log's events, it does not match: its maker
        /// folds the same events to another state, or forged it.
        case mismatch
        /// Its signer is not one this cluster trusts.
        case untrusted
        /// It extends a checkpoint this log does not fold from.
        case otherChain = "other_chain"
    }

    public var id: String
    public var madeBy: String
    public var signer: String
    public var signerKey: String
    public var cause: Cause
    public var detail: String
    /// The peer it came from (empty: this replica's operator).
    public var peer: String
    public var atMs: Milliseconds
}

/// Where history collection stands, as `/status` shows it.
public struct HistoryCollection: Hashable, Sendable {
    public enum Stage: String, Sendable {
        /// No checkpoint, or retention keeps everything.
        case off
        /// Some members have not acknowledged the checkpoint.
        case blocked
        /// Every member acknowledged; the retention period has not passed.
        case retained
        /// The events the checkpoint covers are dropped (or were never held).
        case dropped
    }

    public var stage: Stage
    public var retention: HistoryRetention
    /// The checkpoint it is about (hex id); nil without one.
    public var checkpoint: String?
    /// The members whose acknowledgement is missing, by replica id, and
    /// since when they block (when this replica took the checkpoint).
    public var blockers: [(replica: String, sinceMs: Milliseconds)]
    /// The members that acknowledged.
    public var acknowledged: [String]

    public static func == (lhs: HistoryCollection, rhs: HistoryCollection) -> Bool {
        lhs.stage == rhs.stage && lhs.retention == rhs.retention && lhs.checkpoint == rhs.checkpoint
            && lhs.blockers.map(\.replica) == rhs.blockers.map(\.replica) && lhs.acknowledged == rhs.acknowledged
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(checkpoint)
        hasher.combine(stage)
    }
}

/// What a node knows and does about checkpoints.
struct CheckpointState: Sendable {
    /// How an empty log gets its state.
    enum Start: Sendable {
        /// Sessions hold their cursors while offers may come; `since`: when
        /// the first peer was identified.
        case undecided(since: Milliseconds?)
        /// Bases are coming from a peer, page by page; `rebase`: for a log
        /// that holds events and moves onto the checkpoint (its sessions go on meanwhile).
        case fetching(
            from: ConnectionID, SignedCheckpoint, bases: [EntityBase], bytes: Int, since: Milliseconds, rebase: Bool)
        /// The log is starting from them, or moving onto them.
        case starting(from: String, SignedCheckpoint, bytes: Int, since: Milliseconds, rebase: Bool)
        /// The log has its state, or replays the history.
        case decided
    }

    /// The chain the log folds from, oldest first; the last one is held.
    var chain: [SignedCheckpoint]
    var held: SignedCheckpoint? { chain.last }
    var takenMs: Milliseconds
    /// The checkpoint at or below whose cursor the log holds no event (it
    /// started from it, or dropped its history); nil: every event is held.
    var floor: CheckpointContent?
    /// Acknowledgements by checkpoint id, then replica.
    var acks: [[UInt8]: [String: CheckpointAck]] = [:]
    /// Trusted checkpoints not taken yet, in the order learned: each is
    /// taken, one at a time, once the log folds from the one it extends and
    /// holds every event it covers (a chain shown oldest first is taken in
    /// order, however its members arrived).
    var waiting: [(SignedCheckpoint, peer: String)] = []
    /// No take before this, after one failed.
    var takeAgainAt: Milliseconds?
    /// The take that is out.
    var taking: (SignedCheckpoint, peer: String)?
    var refused: [String: RefusedCheckpoint] = [:]
    var start: Start
    /// Trusted offers from the peers, while the start is undecided.
    var offers: [ConnectionID: SignedCheckpoint] = [:]
    /// The connections whose peer said whether it has a checkpoint (its
    /// chain, empty or not, or its first cursor), while the start is undecided.
    var answered: Set<ConnectionID> = []
    /// What each peer showed: the ids of its chain (the newest last) and
    /// its floor (docs/protocol.md "History floors").
    var peerChains: [ConnectionID: [[UInt8]]] = [:]
    var peerHeld: [ConnectionID: SignedCheckpoint] = [:]
    var peerFloors: [ConnectionID: VectorCursor] = [:]
    var dropping = false
    var dropAgainAt: Milliseconds?
    /// Replicas retired in an open cluster: not members.
    var retired: Set<String>

    init(_ configuration: SyncNode.Configuration, logIsEmpty: Bool) {
        retired = configuration.retired
        chain = configuration.earlierCheckpoints + (configuration.checkpoint.map { [$0.statement] } ?? [])
        takenMs = configuration.checkpoint?.takenMs ?? 0
        floor = configuration.checkpoint?.floor
        for ack in configuration.checkpointAcks { acks[ack.checkpoint, default: [:]][ack.replicaID] = ack }
        let mayStart = configuration.startsFromCheckpoints && logIsEmpty && configuration.checkpoint == nil
        start = mayStart ? .undecided(since: nil) : .decided
    }

    /// Whether new sessions hold their cursors (the start is not decided).
    var holdsCursors: Bool {
        switch start {
        case .undecided: true
        case .fetching(_, _, _, _, _, let rebase), .starting(_, _, _, _, let rebase): !rebase
        case .decided: false
        }
    }

    /// Whether bases are being fetched or taken, for a start or a move.
    var isFetchingBases: Bool {
        switch start {
        case .fetching, .starting: true
        case .undecided, .decided: false
        }
    }

    /// Feeds below this are not held: the log started from, or dropped the history of, a checkpoint.
    var historyFloor: VectorCursor { floor?.cursor ?? VectorCursor() }

    /// Whether the log holds events the held checkpoint covers that may still go.
    var holdsDroppableHistory: Bool {
        guard let held else { return false }
        return floor?.id != held.content.id
    }

    /// When an undecided start gives up waiting for offers.
    func startDecisionAt(_ configuration: SyncNode.Configuration) -> Milliseconds? {
        guard case .undecided(let since?) = start else { return nil }
        return since + configuration.checkpointOfferWaitMs
    }

    /// The acknowledgements of the held checkpoint.
    var heldAcks: [String: CheckpointAck] { held.map { acks[$0.content.id] ?? [:] } ?? [:] }
}
