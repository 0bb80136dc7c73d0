import PeerNet
import Replica

/// What replicas say to each other inside sealed frames once the handshake
/// is done. `docs/protocol.md` gives the byte layout.
public enum Message: Hashable, Sendable {
    /// First message on each side: who is speaking.
    case hello(Hello)
    /// The sender's heads for the feeds named; feeds not named are unchanged
    /// since the sender's previous cursor message. Empty means "no change".
    case cursor(VectorCursor)
    /// Events the receiver lacks, per feed in seq order.
    case events(EventBatch)
    /// The receiver stored batch `batchID`; its heads for the batch's feeds.
    case ack(batchID: UInt64, heads: VectorCursor)
    /// The sender closes the session and says why.
    case goodbye(reason: String)
    /// Addresses of other replicas the sender knows (peer exchange).
    case peers([PeerAdvert])
    /// The sender's event count and state hash, describing the cursor its
    /// cursor messages have reported so far.
    case state(StateSummary)
    /// "Stop pushing me the events of these origin replicas as they arrive:
    /// I get them from someone else first." The sender still sends our own
    /// feeds at once, and the rest at the anti-entropy round
    /// (docs/protocol.md "Link pruning"). Sent only to a peer that declared
    /// `WireCapability.pruning`.
    case prune(origins: [String])
    /// "Push me these origins' events as they arrive again": a pruned link
    /// brought events this side lacked, so the link that used to bring them first is lost.
    case graft(origins: [String])
    /// Revocations the sender knows (docs/identity.md, "Revocation"): all of
    /// them once a peer's hello is admitted, then each new one as it is learned.
    case revocations([Revocation])
    /// Certificates of the replicas whose feeds the sender holds, its own
    /// among them, so the receiver knows every origin's key before their
    /// events arrive (docs/protocol.md "Signed feeds"): all of them once a
    /// peer's hello is admitted, then each new one as it is learned.
    case certificates([Certificate])
    /// Fork proofs (docs/protocol.md "Fork proofs"): the sender's, once a
    /// peer's hello is admitted, then each new one as it is found or learned.
    case forkProofs([ForkProof])
    /// The sender's signed heads, sent when our cursors are equal and our
    /// states are not: the receiver checks them against its own for a fork.
    case heads([SignedHead])
    /// Checkpoints of the chain the sender folds from, oldest first, the
    /// newest last (docs/protocol.md "Checkpoints over the wire"): the last
    /// few once a peer's hello is admitted, then each new one it takes.
    case checkpoints([SignedCheckpoint])
    /// Acknowledgements of the sender's checkpoint that it knows, its own
    /// among them: all of them once a peer's hello is admitted, then each new one.
    case checkpointAcks([CheckpointAck])
    /// "Send me the bases of `checkpoint` that follow `after`" (from the
    /// first with nil): a replica starting from it asks page by page.
    case basesWanted(checkpoint: [UInt8], after: EntityName?)
    /// A page of `checkpoint`'s bases in `(type, id)` order; `last` when
    /// none follow. Empty and last when the sender no longer folds from it.
    case bases(checkpoint: [UInt8], page: [EntityBase], last: Bool)
    /// The cursor at or below which the sender holds no event (it started
    /// from a checkpoint, or dropped its history): a receiver whose cursor
    /// is below it on a feed gets those events from another peer, or moves
    /// onto the sender's checkpoint (docs/protocol.md "History floors").
    case historyFloor(VectorCursor)

    /// A short name for logs.
    public var name: String {
        switch self {
        case .hello: "hello"
        case .cursor: "cursor"
        case .events: "events"
        case .ack: "ack"
        case .goodbye: "goodbye"
        case .peers: "peers"
        case .state: "state"
        case .prune: "prune"
        case .graft: "graft"
        case .revocations: "revocations"
        case .certificates: "certificates"
        case .forkProofs: "fork proofs"
        case .heads: "heads"
        case .checkpoints: "checkpoints"
        case .checkpointAcks: "checkpoint acks"
        case .basesWanted: "bases wanted"
        case .bases: "bases"
        case .historyFloor: "history floor"
        }
    }
}

/// Whether a node only syncs for itself or serves as a hub for others.
public enum NodeRole: UInt8, Hashable, Sendable, CustomStringConvertible {
    case peer = 1
    case relay = 2

    public var description: String { self == .peer ? "peer" : "relay" }
}

/// A node introducing itself to the other end of a connection.
public struct Hello: Hashable, Sendable {
    public var replicaID: String
    public var role: NodeRole
    /// The port the sender accepts connections on (0: it does not listen).
    public var listenPort: UInt16
    /// The sync protocol version the sender speaks (the handshake already
    /// agreed on it; the session checks it again).
    public var protocolVersion: UInt16
    /// The sender's identity key, its proof for this connection and its
    /// certificate; `nil` from a node that has no identity key (the simulator's).
    public var identity: PeerIdentity?

    public init(
        replicaID: String, role: NodeRole = .peer, listenPort: UInt16,
        protocolVersion: UInt16 = WireProtocol.version, identity: PeerIdentity? = nil
    ) {
        self.replicaID = replicaID
        self.role = role
        self.listenPort = listenPort
        self.protocolVersion = protocolVersion
        self.identity = identity
    }
}

/// A bounded run of events sent in one message and acknowledged as one.
public struct EventBatch: Hashable, Sendable {
    /// Numbers batches on one session, from 1.
    public var batchID: UInt64
    /// Per feed in seq order without holes; feeds one after another.
    public var events: [Event]
    /// Per feed of `events`, what verifies them; empty from a node that
    /// neither signs nor verifies (the simulator without identities).
    public var proofs: [FeedID: FeedProof]

    public init(batchID: UInt64, events: [Event], proofs: [FeedID: FeedProof] = [:]) {
        self.batchID = batchID
        self.events = events
        self.proofs = proofs
    }

    /// The feeds the batch carries, in order of first appearance.
    public var feeds: [FeedID] {
        var feeds: [FeedID] = []
        var previous: FeedID?
        for event in events where event.feed != previous {
            previous = event.feed
            if !feeds.contains(event.feed) { feeds.append(event.feed) }
        }
        return feeds
    }

    /// The highest seq the batch carries, per feed.
    public var heads: VectorCursor {
        var heads = VectorCursor()
        for event in events where event.seq > heads[event.feed] { heads[event.feed] = event.seq }
        return heads
    }
}

/// A replica, where it accepts connections and its role, as one peer tells
/// another (a `peers` message).
///
/// ```swift
/// let advert = PeerAdvert(
///     replicaID: "relay-1", address: PeerAddress(host: "10.0.0.9", port: 4100), role: .relay)
/// ```
public struct PeerAdvert: Hashable, Sendable {
    public var replicaID: String
    public var address: PeerAddress
    /// `peer` or `relay`, as the replica's hello or discovery said; `nil`
    /// when the sender does not know it yet (byte 0 on the wire).
    public var role: NodeRole?

    public init(replicaID: String, address: PeerAddress, role: NodeRole? = nil) {
        self.replicaID = replicaID
        self.address = address
        self.role = role
    }
}

/// An entity by type and id: where a page of checkpoint bases resumes.
public struct EntityName: Hashable, Sendable {
    public var type: String
    public var id: String

    public init(type: String, id: String) {
        self.type = type
        self.id = id
    }
}
