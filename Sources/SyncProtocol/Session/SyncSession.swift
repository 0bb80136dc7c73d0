import Replica

/// The sync protocol between this replica and one connected peer, as a pure
/// state machine: inputs in, directives out. The shell reads and ingests
/// events, sends messages and drives the anti-entropy timer.
///
/// ```swift
/// var session = SyncSession(hello: mine, configuration: .init())
/// run(session.start(localCursor: cursor))
/// run(session.receive(message))          // for each message from the peer
/// run(session.localCursorChanged(c))     // after any append or ingest
/// run(session.eventsRead(page))          // answering .readEvents
/// run(session.ingested(batchID: 7, cursor: cursor, batchFeeds: feeds))  // answering .ingest
/// run(session.tick())                    // every anti-entropy interval
/// session.localStateComputed(report)     // after hashing the log; sent with the next cursor
/// ```
///
/// What the peer lacks is known from cursors: its reported heads, raised by
/// every ack and by every batch it sends us (it holds what it sends). Events
/// go per feed in seq order, in batches bounded by count and bytes, with at
/// most `window` batches unacknowledged so that the receiver's memory stays
/// bounded. Everything that exists only while the two sides sync lives in
/// ``Syncing``, inside `State.syncing`.
public struct SyncSession: Sendable {
    public struct Configuration: Sendable {
        /// Most events in one batch.
        public var batchEvents = 5_000
        /// Most bytes (about) in one batch.
        public var batchBytes = 2 << 20
        /// Most batches sent and not yet acknowledged: two keep the receiver
        /// busy (one is stored while the next arrives) with half the memory
        /// of four (docs/storage.md "Memory").
        public var window = 2
        /// A batch of at most this many events is a live push: it may go
        /// past a full window by `liveOverWindow` batches, since a
        /// forwarder's push held behind catch-up batches arrives after the
        /// event came another way and counts as a copy (docs/topology.md).
        public var liveBatchEvents = 64
        public var liveOverWindow = 2
        /// Push new events as they appear; when off, the peer gets only what
        /// we held when its last cursor arrived (pure anti-entropy: one hop
        /// per round).
        public var livePush = true
        /// Link pruning (with `livePush`): ask a peer to stop pushing the
        /// events of an origin it forwards when a batch of them brought
        /// nothing new, and to push them again when a pruned link brings
        /// events we lacked; honour the same requests from the peer. A
        /// pruned origin's events go only at the round, up to what we held
        /// when the peer's previous cursor arrived (docs/protocol.md "Link pruning").
        public var prunesLinks = true
        /// Which peers may sync: any holder of the cluster key, or only
        /// those with a certificate from the cluster's admin.
        public var trust = TrustPolicy.open
        /// Send only runs that a signed head covers: a run read without one
        /// (a forwarded feed this replica holds no signature for yet, as
        /// while a `peerd import` commits it batch by batch) is held back
        /// as declined, since a verifying peer would refuse it
        /// (docs/protocol.md "Runs a peer declined"). `SyncNode` sets it
        /// when it verifies feeds.
        public var sendsOnlyProvenRuns = false
        /// Say nothing of our cursor once the peer's hello is admitted, until
        /// `releaseCursor`: an empty replica that may start from a peer's
        /// checkpoint hears the offers before anyone sends it the history
        /// (docs/protocol.md "Checkpoints over the wire").
        public var holdsCursor = false
        /// The cursor of the checkpoint this log started from or dropped the
        /// history of: feeds the peer holds less of are not sent (the events
        /// are gone here; it gets them from a replica that has them).
        public var historyFloor = VectorCursor()

        public init() {}
    }

    /// What the shell does for the session.
    public enum Directive: Hashable, Sendable {
        case send(Message)
        /// Read up to `maxEvents` / about `maxBytes` of events of these
        /// ranges, in canonical order across feeds, and answer with `eventsRead`.
        case readEvents(ranges: [FeedRange], maxEvents: Int, maxBytes: Int)
        /// Ingest the batch in one transaction and answer with `ingested`.
        case ingest(EventBatch)
        /// The peer said who it is.
        case identified(Hello)
        /// The peer told us where other replicas are.
        case learned([PeerAdvert])
        /// Events of the peer's own feeds in scopes its certificate may not
        /// write, per feed: left out of the batch to ingest.
        case refusedWrites([FeedID: Int])
        /// The peer sent revocations (checked against the admin key by the node).
        case learnedRevocations([Revocation])
        /// The peer sent certificates (checked against the trust policy by the node).
        case learnedCertificates([Certificate])
        /// The peer sent fork proofs (checked against the origins' keys by the node).
        case learnedForkProofs([ForkProof])
        /// The peer showed its signed heads (compared with ours by the node).
        case learnedHeads([SignedHead])
        /// The peer folds from these checkpoints, oldest first (checked and taken by the node).
        case learnedCheckpoints([SignedCheckpoint])
        /// The peer sent checkpoint acknowledgements (checked by the node).
        case learnedAcks([CheckpointAck])
        /// The peer asks for a page of a checkpoint's bases (served by the node).
        case basesWanted(checkpoint: [UInt8], after: EntityName?)
        /// The peer sent a page of a checkpoint's bases.
        case receivedBases(checkpoint: [UInt8], page: [EntityBase], last: Bool)
        /// The peer holds no event at or below this cursor (judged by the node).
        case learnedHistoryFloor(VectorCursor)
        /// The peer's first cursor arrived while ours is held: the node
        /// decides whether to start from a checkpoint, then releases ours.
        case peerCursorHeld
        /// The peer reported its state at this cursor, and ours is not known
        /// there: the node hashes its state if its log stands at that cursor.
        case peerStateReported(VectorCursor)
        /// End the connection; the reason is for the log.
        case close(reason: String)
    }

    enum State: Sendable, CustomStringConvertible {
        /// Before `start`.
        case idle
        /// Our hello is out; the peer's hello is next.
        case awaitingHello
        /// The peer said who it is; its first cursor is next.
        case awaitingCursor(peer: Hello)
        /// Both cursors are known: events flow.
        case syncing(Syncing)
        case closed(reason: String)

        var description: String {
            switch self {
            case .idle: "idle"
            case .awaitingHello: "awaitingHello"
            case .awaitingCursor(let peer): "awaitingCursor(peer: \(peer.replicaID))"
            case .syncing(let syncing): "syncing(peer: \(syncing.peer.replicaID))"
            case .closed(let reason): "closed(\(reason))"
            }
        }
    }

    public private(set) var configuration: Configuration
    private let hello: Hello
    /// Our cursor is not yet told (`Configuration.holdsCursor`).
    public private(set) var cursorHeld = false
    /// The peer's first cursor, while ours is held.
    private var heldPeerCursor: VectorCursor?
    private var state = State.idle
    private var localCursor = VectorCursor()
    /// Our cursor as last sent, to send only what changed.
    private var advertised = VectorCursor()
    /// Our latest state summary.
    private var localState: StateReport?
    /// The connection's handshake transcript, which the peer's identity proof signs.
    private let binding: [UInt8]
    /// Which side of the handshake this node was.
    private let role: Handshake.Role
    /// Whether the peer's certificate keeps some of this replica's feeds from it.
    public private(set) var hidesFeeds = false
    /// Whether the session ever reached syncing (both cursors known).
    public private(set) var hasSynced = false
    /// The peer's identity, once its hello was admitted; `nil` for a peer without one in an open cluster.
    public private(set) var peerIdentity: PeerIdentity?
    /// The cursor the peer's latest `state` message described (`peerStateCursor`).
    private var reportedStateCursor: VectorCursor?

    /// - Parameters:
    ///   - binding: the handshake transcript (`SessionKeys.transcript`) of the connection.
    ///   - role: the side this node took in that handshake.
    public init(
        hello: Hello, configuration: Configuration = Configuration(), binding: [UInt8] = [],
        role: Handshake.Role = .initiator
    ) {
        self.hello = hello
        self.configuration = configuration
        self.binding = binding
        self.role = role
    }

    /// The peer, once its hello arrived.
    public var peer: Hello? {
        switch state {
        case .awaitingCursor(let peer): peer
        case .syncing(let syncing): syncing.peer
        case .idle, .awaitingHello, .closed: nil
        }
    }

    /// True once the peer's first cursor arrived (and until the session closes).
    public var isSyncing: Bool {
        if case .syncing = state { return true }
        return false
    }

    /// What the peer holds as far as we know; empty before its first cursor.
    private var peerHeads: VectorCursor {
        if case .syncing(let syncing) = state { return syncing.peerHeads }
        return VectorCursor()
    }

    /// How many events the peer holds that we lack, and the reverse, from
    /// cursors alone.
    public var progress: (toReceive: UInt64, toSend: UInt64) {
        let peerHeads = peerHeads
        return (localCursor.missingCount(from: peerHeads), peerHeads.missingCount(from: localCursor))
    }

    /// The peer's cursor as this session knows it (what it said it holds,
    /// moved by what it acknowledged and what we sent it).
    public var peerCursor: VectorCursor { peerHeads }

    /// The peer's latest `state` message and the cursor it describes.
    public var peerState: StateReport? {
        if case .syncing(let syncing) = state { return syncing.peerState }
        return nil
    }

    /// The cursor of `peerState`, read without copying the session's state
    /// (the node asks for every session's as its cursor moves).
    public var peerStateCursor: VectorCursor? {
        guard case .syncing = state else { return nil }
        return reportedStateCursor
    }

    /// True when the peer's last reported state describes the cursor we now
    /// know it holds (no ack, batch or cursor has moved it since).
    public var peerStateIsCurrent: Bool {
        guard case .syncing(let syncing) = state, let report = syncing.peerState else { return false }
        return report.cursor == syncing.peerHeads
    }

    /// Opens the session: our hello. Our whole cursor follows once the
    /// peer's hello is admitted, so a peer that is refused learns nothing
    /// of what we hold.
    public mutating func start(localCursor: VectorCursor) -> [Directive] {
        switch state {
        case .idle:
            self.localCursor = localCursor
            state = .awaitingHello
            return [.send(.hello(hello))]
        case .awaitingHello, .awaitingCursor, .syncing, .closed:
            return fail("start in state \(state)")
        }
    }

    public mutating func receive(_ message: Message) -> [Directive] {
        switch (state, message) {
        case (.closed, _):
            return []
        case (.idle, _):
            return fail("unexpected \(message.name) in state \(state)")
        case (_, .goodbye(let reason)):
            state = .closed(reason: "peer said goodbye: \(reason)")
            return [.close(reason: "peer said goodbye: \(reason)")]
        case (.awaitingHello, .hello(let peer)):
            guard peer.replicaID != hello.replicaID else { return fail("connected to itself") }
            guard peer.protocolVersion == hello.protocolVersion else {
                return fail(
                    "incompatible protocol version \(peer.protocolVersion) in the peer's hello; "
                        + "this node speaks \(hello.protocolVersion)")
            }
            do {
                peerIdentity = try configuration.trust.admit(
                    peer.identity, replicaID: peer.replicaID, binding: binding,
                    role: role == .initiator ? .responder : .initiator)
            } catch {
                return fail("refused: \(error)")
            }
            state = .awaitingCursor(peer: peer)
            let shown = visible(localCursor)
            hidesFeeds = shown != localCursor
            localCursor = shown
            advertised = localCursor
            if configuration.holdsCursor {
                cursorHeld = true
                return [.identified(peer)]
            }
            return [.identified(peer), .send(.cursor(localCursor))]
        case (.awaitingCursor, .cursor(let heads)) where cursorHeld:
            guard heldPeerCursor == nil else { return fail("a second cursor before ours") }
            heldPeerCursor = heads
            return [.peerCursorHeld]
        case (.awaitingCursor(let peer), .cursor(let heads)):
            var syncing = Syncing(peer: peer, localReplicaID: hello.replicaID)
            let stateDirectives = syncing.stateIfDue(localState, advertised: advertised)
            let directives = syncing.peerReported(heads, localCursor: localCursor, configuration: configuration)
            state = .syncing(syncing)
            hasSynced = true
            return stateDirectives + directives
        case (.syncing(var syncing), .cursor(let heads)):
            state = .idle  // so that `syncing` is the only copy while it changes
            defer { state = .syncing(syncing) }
            return syncing.peerReported(heads, localCursor: localCursor, configuration: configuration)
        case (.awaitingCursor, .peers(let adverts)), (.syncing, .peers(let adverts)):
            return [.learned(adverts)]
        case (.awaitingCursor, .revocations(let revocations)), (.syncing, .revocations(let revocations)):
            return [.learnedRevocations(revocations)]
        case (.awaitingCursor, .certificates(let certificates)), (.syncing, .certificates(let certificates)):
            return [.learnedCertificates(certificates)]
        case (.awaitingCursor, .forkProofs(let proofs)), (.syncing, .forkProofs(let proofs)):
            return [.learnedForkProofs(proofs)]
        case (.syncing, .heads(let heads)):
            return [.learnedHeads(heads.filter { mayRead($0.feed) })]
        case (.awaitingCursor, .checkpoints(let checkpoints)), (.syncing, .checkpoints(let checkpoints)):
            return [.learnedCheckpoints(checkpoints)]
        case (.awaitingCursor, .checkpointAcks(let acks)), (.syncing, .checkpointAcks(let acks)):
            return [.learnedAcks(acks)]
        case (.awaitingCursor, .basesWanted(let checkpoint, let after)),
            (.syncing, .basesWanted(let checkpoint, let after)):
            // Bases hold every feed's state: only for a peer that may read them all.
            guard !hidesFeeds else { return fail("bases asked for by a peer whose scopes hide feeds") }
            return [.basesWanted(checkpoint: checkpoint, after: after)]
        case (.awaitingCursor, .bases(let checkpoint, let page, let last)),
            (.syncing, .bases(let checkpoint, let page, let last)):
            return [.receivedBases(checkpoint: checkpoint, page: page, last: last)]
        case (.awaitingCursor, .historyFloor(let floor)), (.syncing, .historyFloor(let floor)):
            return [.learnedHistoryFloor(VectorCursor(heads: floor.heads.filter { mayRead($0.key) }))]
        case (.syncing(var syncing), .events(let batch)):
            guard batch.batchID == syncing.receivedBatchIDs + 1 else {
                return fail("batch \(batch.batchID) out of order, expected \(syncing.receivedBatchIDs + 1)")
            }
            state = .idle
            syncing.received(batch)
            state = .syncing(syncing)
            let (writable, refused) = permittedWrites(batch)
            return (refused.isEmpty ? [] : [.refusedWrites(refused)]) + [.ingest(writable)]
        case (.syncing(var syncing), .state(let summary)):
            // The sender's cursor messages so far describe what it held.
            let report = StateReport(summary: summary, cursor: syncing.peerAdvertised)
            if let localState { syncing.noteState(localState, local: true) }
            syncing.noteState(report, local: false)
            reportedStateCursor = report.cursor
            state = .syncing(syncing)
            // Ours at that cursor, if the log still stands there, lets the two be compared.
            return syncing.localStates.contains { $0.cursor == report.cursor } || hidesFeeds
                ? [] : [.peerStateReported(report.cursor)]
        case (.syncing(var syncing), .ack(let batchID, let heads)):
            guard batchID < syncing.nextBatchID, syncing.unacknowledged > 0 else {
                return fail("ack for unsent batch \(batchID)")
            }
            state = .idle
            defer { state = .syncing(syncing) }
            syncing.unacknowledged -= 1
            syncing.acknowledged(batchID, heads: heads)
            return syncing.sendHeldPage(configuration: configuration)
                + syncing.pump(localCursor: localCursor, configuration: configuration)
        case (.syncing(var syncing), .prune(let origins)):
            // Our own events always go at once; without pruning, as before it existed.
            guard configuration.prunesLinks else { return [] }
            syncing.prunedByPeer.formUnion(origins.filter { $0 != hello.replicaID })
            state = .syncing(syncing)
            return []
        case (.syncing(var syncing), .graft(let origins)):
            guard configuration.prunesLinks else { return [] }
            state = .idle
            defer { state = .syncing(syncing) }
            syncing.prunedByPeer.subtract(origins)
            return syncing.pump(localCursor: localCursor, configuration: configuration)
        case (.awaitingHello, .cursor), (.awaitingHello, .events), (.awaitingHello, .ack),
            (.awaitingHello, .peers), (.awaitingHello, .state), (.awaitingHello, .prune), (.awaitingHello, .graft),
            (.awaitingHello, .revocations), (.awaitingHello, .certificates), (.awaitingHello, .forkProofs),
            (.awaitingHello, .heads), (.awaitingCursor, .heads),
            (.awaitingHello, .checkpoints), (.awaitingHello, .checkpointAcks), (.awaitingHello, .basesWanted),
            (.awaitingHello, .bases), (.awaitingHello, .historyFloor),
            (.awaitingCursor, .hello), (.awaitingCursor, .events), (.awaitingCursor, .ack),
            (.awaitingCursor, .state), (.awaitingCursor, .prune), (.awaitingCursor, .graft), (.syncing, .hello):
            return fail("unexpected \(message.name) in state \(state)")
        }
    }

    /// Tells the peer our cursor at last (`Configuration.holdsCursor`):
    /// after starting from a checkpoint, or once no start is coming. When
    /// the peer's first cursor came meanwhile, events flow from now.
    public mutating func releaseCursor(localCursor cursor: VectorCursor) -> [Directive] {
        guard cursorHeld, case .awaitingCursor(let peer) = state else { return [] }
        cursorHeld = false
        localCursor = visible(cursor)
        advertised = localCursor
        var directives: [Directive] = [.send(.cursor(localCursor))]
        if let heads = heldPeerCursor {
            heldPeerCursor = nil
            var syncing = Syncing(peer: peer, localReplicaID: hello.replicaID)
            directives += syncing.stateIfDue(localState, advertised: advertised)
            directives += syncing.peerReported(heads, localCursor: localCursor, configuration: configuration)
            state = .syncing(syncing)
            hasSynced = true
        }
        return directives
    }

    /// This log no longer holds the events below `floor` (it dropped them
    /// under a checkpoint): feeds the peer holds less of are not sent.
    public mutating func historyDropped(below floor: VectorCursor) {
        configuration.historyFloor = floor
    }

    /// Our log changed (a local append, or events from any peer). A feed
    /// the peer declined whose head moved here goes again from what the
    /// peer holds: the new events may come with a proof it can verify.
    public mutating func localCursorChanged(_ cursor: VectorCursor) -> [Directive] {
        let previous = localCursor
        localCursor = peer == nil ? cursor : visible(cursor)
        if cursorHeld { return [] }
        if peerScopes != nil { hidesFeeds = localCursor != cursor }
        guard case .syncing(var syncing) = state else { return [] }
        state = .idle
        defer { state = .syncing(syncing) }
        if !syncing.declined.isEmpty {
            syncing.retryDeclined(syncing.declined.filter { localCursor[$0] != previous[$0] })
        }
        guard configuration.livePush else { return [] }
        return syncing.pump(localCursor: localCursor, configuration: configuration)
    }

    /// Certificates crossed the connection (sent or received): the feeds
    /// the peer declined go again from what it holds, since a key it lacked
    /// may have reached it (docs/protocol.md "Runs a peer declined").
    public mutating func certificatesExchanged() -> [Directive] {
        retryEveryDeclined()
    }

    /// Another process stored signatures here without new events (an
    /// import's signed heads for events already held): a run held back for
    /// want of one may now go with its proof.
    public mutating func signaturesStored() -> [Directive] {
        retryEveryDeclined()
    }

    private mutating func retryEveryDeclined() -> [Directive] {
        guard case .syncing(var syncing) = state else { return [] }
        state = .idle
        defer { state = .syncing(syncing) }
        // Counted even with nothing declined yet: a read out now must not hold back what they prove.
        syncing.retryDeclined(syncing.declined)
        return syncing.pump(localCursor: localCursor, configuration: configuration)
    }

    /// Feeds the peer acknowledged without taking them, waiting for a reason to go again.
    public var declinedFeeds: Set<FeedID> {
        if case .syncing(let syncing) = state { return syncing.declined }
        return []
    }

    /// The shell read the events a `.readEvents` asked for.
    public mutating func eventsRead(_ page: EventPage) -> [Directive] {
        guard case .syncing(var syncing) = state, syncing.readPending else { return [] }
        state = .idle
        defer { state = .syncing(syncing) }
        return syncing.eventsRead(page, localCursor: localCursor, configuration: configuration)
    }

    /// The shell ingested a batch the peer sent; `cursor` is ours after it,
    /// `newEvents` how many of the batch's events per feed it stored (the
    /// rest it held already, or refused), `directOrigins` the replicas this
    /// node has a session with (each pushes its own events at once).
    ///
    /// With `prunesLinks`, an origin the peer forwards is pruned on this
    /// link when the batch brought nothing new of it; and as soon as the
    /// peer forwards anything, every origin in `directOrigins` is (its own
    /// push brings its events anyway; a forwarded copy that comes first
    /// only won a race). A pruned origin whose events were new is grafted
    /// (once two of our rounds have passed since the prune, so that a push
    /// the peer sent before our prune reached it does not count), and then
    /// only a batch of duplicates prunes it again.
    public mutating func ingested(
        batchID: UInt64, cursor: VectorCursor, batchFeeds: [FeedID], newEvents: [FeedID: Int],
        directOrigins: Set<String> = []
    ) -> [Directive] {
        guard case .syncing(var syncing) = state else { return [] }
        var heads = VectorCursor()
        for feed in batchFeeds { heads[feed] = cursor[feed] }
        var directives: [Directive] = [.send(.ack(batchID: batchID, heads: heads))]
        if configuration.prunesLinks && configuration.livePush {
            directives += syncing.linkSignals(
                batchFeeds: batchFeeds, newEvents: newEvents, directOrigins: directOrigins)
            state = .syncing(syncing)
        }
        return directives + localCursorChanged(cursor)
    }

    /// Origins whose events the peer pushes only at the round, at our request.
    public var prunedOrigins: Set<String> {
        if case .syncing(let syncing) = state { return Set(syncing.prunedByUs.keys) }
        return []
    }

    /// True when we pruned the origin of `feed` on this link and the peer
    /// holds more of `feed` than `head`: events an eager link should be
    /// bringing (`SyncNode` grafts the origin here when none does).
    public func awaitsOverPrunedLink(_ feed: FeedID, beyond head: UInt64) -> Bool {
        guard case .syncing(let syncing) = state else { return false }
        return syncing.peerHeads[feed] > head && syncing.prunedByUs[feed.origin] != nil
    }

    /// Asks the peer to push a pruned origin's events at once again: its
    /// tree link was lost (a graft, as when a pruned link brings news).
    public mutating func graft(_ origin: String) -> [Directive] {
        guard case .syncing(var syncing) = state, syncing.prunedByUs[origin] != nil else { return [] }
        state = .idle
        defer { state = .syncing(syncing) }
        return syncing.graft([origin])
    }

    /// Origins the peer asked us to push only at the round.
    public var originsPrunedByPeer: Set<String> {
        if case .syncing(let syncing) = state { return syncing.prunedByPeer }
        return []
    }

    /// The anti-entropy timer: say what changed in our cursor since we last
    /// said it (an empty cursor message when nothing did), then our state
    /// summary if it is new and describes that cursor.
    public mutating func tick() -> [Directive] {
        guard case .syncing(var syncing) = state else { return [] }
        var changed = VectorCursor()
        for (feed, head) in localCursor.heads where head != advertised[feed] { changed[feed] = head }
        advertised = localCursor
        syncing.rounds += 1
        let directives = [.send(.cursor(changed))] + syncing.stateIfDue(localState, advertised: advertised)
        state = .syncing(syncing)
        return directives
    }

    /// The shell hashed the log: `report` goes to the peer once, as soon as
    /// our cursor messages have reported `report.cursor` (now, or right
    /// after the next cursor message that does).
    @discardableResult
    public mutating func localStateComputed(_ report: StateReport) -> [Directive] {
        localState = report
        guard case .syncing(var syncing) = state else { return [] }
        state = .idle
        defer { state = .syncing(syncing) }
        syncing.noteState(report, local: true)
        var directives: [Directive] = []
        let between =
            report.cursor.heads.allSatisfy { $0.value >= advertised[$0.key] && $0.value <= localCursor[$0.key] }
            && advertised.heads.allSatisfy { report.cursor[$0.key] >= $0.value }
        if report.cursor != advertised, between, !hidesFeeds {
            // It describes a cursor we hold, ahead of what the rounds told: say that first, then the state.
            var changed = VectorCursor()
            for (feed, head) in report.cursor.heads where head != advertised[feed] { changed[feed] = head }
            advertised = report.cursor
            directives.append(.send(.cursor(changed)))
        }
        return directives + syncing.stateIfDue(report, advertised: advertised)
    }

    /// The last comparison of the two states at one cursor: nil before
    /// the first (neither side hashed at a cursor the other reported).
    public var stateCheck: StateCheck? {
        if case .syncing(let syncing) = state { return syncing.stateCheck }
        return nil
    }

    /// Ends the session from our side.
    public mutating func close(reason: String) -> [Directive] {
        switch state {
        case .closed:
            return []
        case .idle, .awaitingHello, .awaitingCursor, .syncing:
            state = .closed(reason: reason)
            return [.send(.goodbye(reason: reason)), .close(reason: reason)]
        }
    }

    /// The peer's certificate, when it limits what the peer may read and
    /// write: in a cluster with an admin key (in an open cluster nothing
    /// vouches for a certificate's scopes).
    private var peerScopes: Certificate? {
        configuration.trust.adminKey == nil ? nil : peerIdentity?.certificate
    }

    /// Whether the peer's certificate lets it read a scope this replica's
    /// does not: it may hold feeds it keeps from us, so its state may
    /// describe more than ours, and a `state` it sent while it held none of
    /// them says nothing once it does (docs/identity.md "Scopes").
    public var peerMayReadMore: Bool {
        guard let theirs = peerScopes, let ours = hello.identity?.certificate else { return false }
        if ours.readScopes.contains(Certificate.everyScope) { return false }
        return theirs.readScopes.contains { $0 == Certificate.everyScope || !ours.mayRead($0) }
    }

    /// Whether the peer may read `feed` (its scope, or the peer's own feed).
    public func mayRead(_ feed: FeedID) -> Bool {
        guard let scopes = peerScopes, let peer else { return true }
        return scopes.mayRead(feed.scope) || feed.origin == peer.replicaID
    }

    /// The feeds of `cursor` the peer may read, and its own: the only ones
    /// this session tells it about, asks for or sends.
    private func visible(_ cursor: VectorCursor) -> VectorCursor {
        guard peerScopes != nil else { return cursor }
        return VectorCursor(heads: cursor.heads.filter { feed, _ in mayRead(feed) })
    }

    /// The batch without the events of the peer's own feeds whose scope its
    /// certificate may not write, and those left out, per feed. (Events it
    /// forwards from other replicas are not checked here.)
    private func permittedWrites(_ batch: EventBatch) -> (EventBatch, [FeedID: Int]) {
        guard let scopes = peerScopes, let peer else { return (batch, [:]) }
        var refused: [FeedID: Int] = [:]
        var kept = batch
        kept.events = batch.events.filter { event in
            guard event.feed.origin == peer.replicaID, !scopes.mayWrite(event.feed.scope) else {
                return true
            }
            refused[event.feed, default: 0] += 1
            return false
        }
        return (kept, refused)
    }

    private mutating func fail(_ reason: String) -> [Directive] {
        state = .closed(reason: reason)
        return [.send(.goodbye(reason: reason)), .close(reason: reason)]
    }
}

/// Consecutive events of one feed.
public struct FeedRange: Hashable, Sendable {
    public var feed: FeedID
    public var seqs: ClosedRange<UInt64>

    public init(feed: FeedID, seqs: ClosedRange<UInt64>) {
        self.feed = feed
        self.seqs = seqs
    }
}
