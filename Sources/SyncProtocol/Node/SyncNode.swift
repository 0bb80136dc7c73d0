import PeerNet
import Replica

/// One replica's side of sync, as a pure state machine: its peer manager and
/// one `SyncSession` per connection. Inputs in (connections, messages, the
/// time, storage's answers), effects out.
///
/// The node never touches the event log. It asks for storage work with
/// effects (`.read`, `.store`, `.computeState`, `.writePendingProjections`)
/// and gets the answers back as inputs (`eventsRead`, `stored`,
/// `stateComputed`), so a shell can run storage on its own executor and a
/// long catch-up never stalls the network. The TCP shell (`GossipService`)
/// turns the other effects into socket calls, the simulator into in-memory
/// deliveries. Timers are deadlines: after any input, `nextDeadline` says
/// when `tick` has something to do.
///
/// ```swift
/// var node = SyncNode(configuration: .init(hello: Hello(replicaID: id, listenPort: 4100)), cursor: cursor)
/// node.addPeer(PeerAddress("10.0.0.2:4100")!, source: .configured, now: clock())
/// carryOut(node.tick(now: clock()))              // dials
/// carryOut(node.received(message, on: id, now: clock()))
/// carryOut(node.eventsRead(.success(page), on: id, now: clock()))   // answering .read
/// sleep(until: node.nextDeadline)
/// ```
public struct SyncNode: Sendable {
    public struct Configuration: Sendable {
        public var hello: Hello
        public var session = SyncSession.Configuration()
        public var peers = PeerManager.Configuration()
        /// How often each session sends its cursor changes (and so a keepalive).
        public var antiEntropyIntervalMs: Milliseconds = 1_000
        /// How long a feed that a peer announced over a pruned link may go
        /// without progress before its origin is grafted there: the tree
        /// link that should bring it is taken as lost (docs/topology.md).
        public var graftAfterMs: Milliseconds = 250
        /// How long storage work that failed waits before it is tried again.
        public var storageRetryMs: Milliseconds = 5_000
        /// When the state is hashed for the peers (a hash reads every
        /// projection): at once when a peer's summary describes our cursor;
        /// in a lull (the cursor stood still `stateQuietMs`) at a *sampled*
        /// cursor (its event count a multiple of `stateSampleEvery`, so
        /// replicas holding the same events hash at the same cursors and
        /// their summaries meet); else once the cursor stood still for
        /// `stateHashSpacingMs`. Hashes of our own accord are never sooner
        /// than `stateHashGapMs` after the last.
        public var stateQuietMs: Milliseconds = 25
        public var stateSampleEvery: UInt64 = 4
        public var stateHashSpacingMs: Milliseconds = 1_000
        public var stateHashGapMs: Milliseconds = 200
        /// Seeds the peer manager's choice of peers.
        public var seed: UInt64 = 0
        /// This replica's identity key, which every `hello` proves, and its
        /// certificate when it has one; `nil`: hellos carry no identity.
        public var identity: (key: SigningKey, certificate: Certificate?)?
        /// The revocations stored from earlier runs.
        public var revocations: [Revocation] = []
        /// The fork proofs of the feeds the log has quarantined.
        public var forkProofs: [ForkProof] = []
        /// The certificates the log keeps (learned from peers before).
        public var certificates: [Certificate] = []
        /// The checkpoint the log folds from, as it travels; when it was
        /// taken (Unix ms), and whether the log still holds what it covers.
        public var checkpoint: (statement: SignedCheckpoint, takenMs: Milliseconds, floor: CheckpointContent?)?
        /// The checkpoints it extends that the log took before, oldest first.
        public var earlierCheckpoints: [SignedCheckpoint] = []
        /// The acknowledgements of `checkpoint` the log keeps.
        public var checkpointAcks: [CheckpointAck] = []
        /// An empty log may start from a peer's trusted checkpoint instead
        /// of replaying the history (docs/protocol.md "Checkpoints over the
        /// wire"); `peerd run` does unless `--start-from replay`.
        public var startsFromCheckpoints = false
        /// How long an empty log waits for a checkpoint offer once a peer is
        /// identified, before it replays the history from whoever has it.
        public var checkpointOfferWaitMs: Milliseconds = 300
        /// When events covered by a checkpoint that every member acknowledged
        /// are dropped (docs/operations.md "Dropping history").
        public var retention = HistoryRetention.everything
        /// Replicas retired in an open cluster (`peerd retire`): their
        /// missing acknowledgements no longer hold the history.
        public var retired: Set<String> = []

        public init(hello: Hello) {
            self.hello = hello
        }
    }

    /// What the shell does: network effects, and storage work whose answer
    /// comes back as an input.
    public enum Effect: Hashable, Sendable {
        case send(ConnectionID, Message)
        case dial(PeerAddress)
        /// Send what is queued, then close.
        case close(ConnectionID, reason: String)
        /// Read events of these ranges in canonical order across feeds (at
        /// most `maxEvents`, about `maxBytes`); answer with `eventsRead`.
        case read(ConnectionID, ranges: [FeedRange], maxEvents: Int, maxBytes: Int)
        /// Ingest every event of these batches in one transaction, each
        /// feed's events verified with `keys` (unverified when `nil`); answer with `stored`.
        case store(ConnectionID, [EventBatch], keys: FeedKeys?)
        /// Hash the log's state (one snapshot: the summary and its cursor);
        /// answer with `stateComputed`.
        case computeState
        /// The log is quiet: write the projection rows still pending.
        case writePendingProjections
        /// Revocations this node learned: store them, so they hold after a restart.
        case revoked([Revocation])
        /// Fork proofs a peer sent, checked with `keys`: quarantine their feeds in the log.
        case quarantine([ForkProof], keys: FeedKeys)
        /// Certificates learned from peers: keep them in the log.
        case keepCertificates([Certificate])
        /// Compare a peer's signed heads with the log's; quarantine the
        /// feeds they prove forked and answer with `forksFound`.
        case compareHeads([SignedHead], keys: FeedKeys)
        /// Recompute a checkpoint from the log's events and fold from it when
        /// it matches; answer with `checkpointTaken`.
        case takeCheckpoint(SignedCheckpoint)
        /// Read up to `limit` bases (about `maxBytes`) of the checkpoint the
        /// log folds from, after `after`; answer with `basesRead`.
        case readBases(ConnectionID, checkpoint: [UInt8], after: EntityName?, limit: Int, maxBytes: Int)
        /// Start the empty log from a checkpoint and its bases, or (`rebase`)
        /// move the log onto them; answer with `startedFromCheckpoint`.
        case startFromCheckpoint(SignedCheckpoint, bases: [EntityBase], rebase: Bool)
        /// Keep checkpoint acknowledgements in the log.
        case keepAcks([CheckpointAck])
        /// Drop the events the checkpoint covers and free their space;
        /// answer with `historyDropped`.
        case dropHistory(checkpoint: [UInt8])
    }

    public let configuration: Configuration
    public internal(set) var manager: PeerManager
    public internal(set) var sessions: [ConnectionID: SyncSession] = [:]
    /// What this replica holds, as storage last said.
    public internal(set) var cursor: VectorCursor {
        didSet { notePeerStates() }
    }
    /// Whether a session's peer reported its state at `cursor`: kept as the
    /// cursor moves and states arrive, so that `nextDeadline`, asked after
    /// every message, takes no pass over the sessions (`SyncNode+Storage`).
    var peerDescribesCursor = false
    public internal(set) var statistics = SyncStatistics()
    /// This replica's state summary as last computed (see
    /// `Configuration.stateQuietMs`; only while a session is open), with
    /// the cursor it describes, which writes may have passed since; `nil`
    /// until then.
    public internal(set) var localState: StateReport?
    /// When the cursor last moved, and when a hash was last asked for.
    var cursorMovedAt: Milliseconds = 0
    var lastHashAt: Milliseconds?
    let emit: @Sendable (LogRecord) -> Void
    var lastAntiEntropyAt: Milliseconds?
    /// The cursor at the last anti-entropy round, to tell a quiet log from a busy one.
    var cursorAtLastRound: VectorCursor?
    /// The cursor when the pending projection rows were last asked to be written.
    var projectionsWrittenAt: VectorCursor?
    /// Storage work asked for and not answered yet, or waiting to be tried again.
    var storage = StorageWork()
    /// Per connection: the peer's IP as the socket saw it.
    var remoteHosts: [ConnectionID: String] = [:]
    /// Per identified connection: where its replica accepts connections.
    var adverts: [ConnectionID: PeerAdvert] = [:]
    /// Per replica: when our cursors last agreed (or events last moved).
    var lastInSyncAt: [String: Milliseconds] = [:]
    /// Counters for `metrics()`; the gauges are filled when asked.
    var counters = SyncMetrics()
    /// Feed slots where a fork was seen, to count each once.
    var forkSlots: Set<FeedSlot> = []
    /// Per origin replica: the most its events' times were ahead of our clock.
    var clockSkewMs: [String: Int64] = [:]
    /// Per identified connection: the backlog being received.
    var catchUps: [ConnectionID: CatchUpProgress] = [:]
    /// The peer manager's hub state as last logged.
    var loggedHubState: HubState?
    /// The newest events committed here, for live pushes without a read.
    var recent = RecentEvents()
    /// Peer replicas logged as diverged (same cursor, other state), each once.
    var divergedPeers: Set<String> = []
    /// Revoked replicas, by replica id (only those of this cluster's admin key).
    var revoked: [String: Revocation] = [:]
    /// The certificate this node shows (`ownCertificate(_:)`).
    let ownCertificate: Certificate?
    /// The certificates learned, by replica id.
    var certificates: [String: [Certificate]] = [:]
    /// The keys events are verified with, from `certificates` and this node's own.
    var feedKeys = FeedKeys()
    /// Quarantined feeds, with their proofs.
    var forkProofs: [FeedID: ForkProof] = [:]
    /// Feeds that peers announced over pruned links beyond our head, awaited from the eager ones.
    var awaited: [FeedID: AwaitedFeed] = [:]
    /// Feeds refused from peers for failing verification, until events of them are stored.
    var refusals = FeedRefusals()
    /// Checkpoints: the one held, its acknowledgements, the start of an
    /// empty log and the dropping of history (`SyncNode+Checkpoints`).
    var checkpoints: CheckpointState

    /// A node whose log holds `cursor`.
    public init(
        configuration: Configuration, cursor: VectorCursor, logger: @escaping @Sendable (LogRecord) -> Void = { _ in }
    ) {
        self.configuration = configuration
        self.manager = PeerManager(
            replicaID: configuration.hello.replicaID, role: configuration.hello.role,
            configuration: configuration.peers,
            seed: configuration.seed)
        self.emit = logger
        self.cursor = cursor
        self.checkpoints = CheckpointState(configuration, logIsEmpty: cursor.heads.isEmpty)
        self.ownCertificate = Self.ownCertificate(configuration)
        for revocation in configuration.revocations { _ = keep(revocation) }
        if let ownCertificate { _ = keep(ownCertificate) }
        for certificate in configuration.certificates { _ = keep(certificate) }
        for proof in configuration.forkProofs {
            forkProofs[proof.feed] = proof
            self.cursor[proof.feed] = 0
        }
    }

    /// Learns a peer's address; `role` when discovery said (mDNS TXT).
    public mutating func addPeer(
        _ address: PeerAddress, source: PeerSource, replicaID: String? = nil, role: NodeRole? = nil,
        now: Milliseconds
    ) {
        manager.addPeer(address, source: source, replicaID: replicaID, role: role, now: now)
    }

    public mutating func removePeer(_ address: PeerAddress) {
        manager.removePeer(address)
    }

    public mutating func dialFailed(_ address: PeerAddress, reason: String, now: Milliseconds) {
        emit(LogRecord(.debug, .dialFailed, "dial failed", [("addr", address.description), ("reason", reason)]))
        manager.dialFailed(address, reason: reason, now: now)
    }

    /// A connection finished its handshake; the session starts.
    ///
    /// - Parameter transcript: the handshake's `SessionKeys.transcript`, which
    ///   this side's identity proof signs and the peer's must.
    public mutating func connectionOpened(
        _ id: ConnectionID, dialed: PeerAddress?, remoteHost: String? = nil, transcript: [UInt8] = [],
        now: Milliseconds
    ) -> [Effect] {
        if let remoteHost { remoteHosts[id] = remoteHost }
        let admission = manager.connected(id, dialed: dialed, now: now)
        let role: Handshake.Role = dialed == nil ? .responder : .initiator
        var hello = configuration.hello
        if let identity = configuration.identity {
            hello.identity = PeerIdentity.proving(
                identity.key, certificate: identity.certificate, binding: transcript, role: role)
        }
        var sessionConfiguration = configuration.session
        sessionConfiguration.trust.revoked = revoked
        sessionConfiguration.sendsOnlyProvenRuns = verifiesFeeds
        sessionConfiguration.holdsCursor = checkpoints.holdsCursors
        sessionConfiguration.historyFloor = checkpoints.historyFloor
        var session = SyncSession(
            hello: hello, configuration: sessionConfiguration, binding: transcript, role: role)
        if localStateIsCurrent, let localState { session.localStateComputed(localState) }
        let directives = session.start(localCursor: cursor)
        sessions[id] = session
        return perform(directives, on: id, now: now) + carryOut(admission, now: now)
    }

    /// A message arrived on a connection. While a batch from that
    /// connection is being stored, it waits its turn (in order), and event
    /// batches that wait together are stored in one transaction.
    public mutating func received(_ message: Message, on id: ConnectionID, now: Milliseconds) -> [Effect] {
        received([message], on: id, now: now)
    }

    /// Messages that arrived on a connection, in order; a run of event
    /// batches among them is stored in one transaction (one commit; the
    /// projection rows wait for later, see docs/storage.md), then
    /// acknowledged batch by batch. The outcome is the same as receiving
    /// them one at a time.
    public mutating func received(_ messages: [Message], on id: ConnectionID, now: Milliseconds) -> [Effect] {
        guard sessions[id] != nil, !messages.isEmpty else { return [] }
        manager.heard(id, now: now)
        if storage.isBusy(id) {
            storage.queue(messages, on: id)
            return []
        }
        return process(messages[...], on: id, now: now)
    }

    /// A connection is gone (closed by either side, or failed).
    public mutating func connectionClosed(_ id: ConnectionID, now: Milliseconds) {
        checkpointPeerLost(id, now: now)
        sessions[id] = nil
        if peerDescribesCursor { notePeerStates() }
        remoteHosts[id] = nil
        adverts[id] = nil
        catchUps[id] = nil
        storage.forget(id)
        manager.disconnected(id, now: now)
        noteTopology()
    }

    /// When `tick` next has something to do: a dial, a silent connection to
    /// close, the anti-entropy round, storage work to try again, a lost
    /// tree link to graft around.
    public var nextDeadline: Milliseconds {
        var deadline = (lastAntiEntropyAt ?? Milliseconds.min / 2) + configuration.antiEntropyIntervalMs
        if let peers = manager.nextDeadline { deadline = min(deadline, peers) }
        if let retry = storage.retryAt { deadline = min(deadline, retry) }
        if let repair = nextGraftCheck { deadline = min(deadline, repair) }
        if let decision = checkpoints.startDecisionAt(configuration) { deadline = min(deadline, decision) }
        if let hash = stateHashDueAt { deadline = min(deadline, hash) }
        return deadline
    }

    /// The timer: peer dialing and liveness, storage work due again, and
    /// the anti-entropy round once `antiEntropyIntervalMs` has passed.
    public mutating func tick(now: Milliseconds) -> [Effect] {
        var effects = carryOut(manager.tick(now: now), now: now)
        noteTopology()
        if let retry = storage.retryAt, retry <= now { effects += retryStorage() }
        if let repair = nextGraftCheck, repair <= now { effects += graftLostLinks(now: now) }
        effects += decideStartIfDue(now: now)
        if lastAntiEntropyAt.map({ now - $0 >= configuration.antiEntropyIntervalMs }) ?? true {
            lastAntiEntropyAt = now
            effects += endExpiredSessions() + antiEntropyRound(now: now)
        }
        // After the round: a summary answered at once must follow the cursor message the round sent.
        if let hash = stateHashDueAt, hash <= now { effects += hashState(now: now) }
        return effects
    }

    /// The log gained events this node did not ingest itself (a local
    /// append, another process): push them to the peers that lack them.
    /// `committed`: the events of that commit when the shell has them (a
    /// few local writes), and `signed` the heads it signed; their pushes then need no read.
    public mutating func localChanged(
        cursor fresh: VectorCursor, committed: [Event] = [], signed: [SignedHead] = [], now: Milliseconds
    ) -> [Effect] {
        recent.remember(committed, signed: signed)
        guard raiseCursor(to: fresh, now: now) else { return [] }
        return broadcastCursor(except: nil, now: now) + logGrew(now: now)
    }

    /// Another process committed to the log without moving the cursor: it
    /// may have stored the signatures of runs the sessions held back
    /// unproven, which go again to the peers that lack them.
    public mutating func storedElsewhere(now: Milliseconds) -> [Effect] {
        var effects: [Effect] = []
        for id in sessions.keys.sorted() where sessions[id]?.peer != nil {
            effects += perform(sessions[id]!.signaturesStored(), on: id, now: now)
        }
        return effects
    }

    /// Raises `cursor` to `fresh`, feed by feed (a log only grows, so an
    /// answer that was overtaken never lowers it); true when it moved.
    mutating func raiseCursor(to fresh: VectorCursor, now: Milliseconds) -> Bool {
        var moved: Set<FeedID> = []
        for (feed, head) in fresh.heads where head > cursor[feed] {
            cursor[feed] = head
            moved.insert(feed)
        }
        refusals.resolve(moved)
        if !moved.isEmpty { cursorMovedAt = now }
        return !moved.isEmpty
    }

    /// Closes every session with a goodbye; a clean stop also leaves the
    /// file with every projection row written.
    public mutating func shutdown(reason: String, now: Milliseconds) -> [Effect] {
        var effects: [Effect] = [.writePendingProjections]
        for id in sessions.keys.sorted() {
            effects += perform(sessions[id]!.close(reason: reason), on: id, now: now)
        }
        return effects
    }

    /// Every session hears our new cursor; the ones whose peer lacks events read them.
    mutating func broadcastCursor(except excluded: ConnectionID?, now: Milliseconds) -> [Effect] {
        var effects: [Effect] = []
        for id in sessions.keys.sorted() where id != excluded {
            effects += perform(sessions[id]!.localCursorChanged(cursor), on: id, now: now)
        }
        return effects
    }

    /// Carries out a session's directives: network ones become effects,
    /// storage ones become storage effects whose answers come back later.
    mutating func perform(_ directives: [SyncSession.Directive], on id: ConnectionID, now: Milliseconds) -> [Effect] {
        var effects: [Effect] = []
        var readFromMemory: [EventPage] = []
        for directive in directives {
            switch directive {
            case .send(let message):
                if case .events(let batch) = message { statistics.eventsSent += batch.events.count }
                effects.append(.send(id, message))
            case .close(let reason):
                // A session refused before it synced (an identity, a version): the address shows why.
                if sessions[id]?.hasSynced == false { manager.noteRefusal(id, reason: reason) }
                effects.append(.close(id, reason: reason))
            case .identified(let hello) where revoked[hello.replicaID] != nil:
                // Revoked after this session began: nothing more goes to it.
                return effects + refuseRevoked(hello.replicaID, on: id)
            case .identified(let hello):
                emit(
                    LogRecord(
                        .info, .peerIdentified, "peer identified",
                        [("conn", "\(id)"), ("peer", hello.replicaID), ("role", "\(hello.role)")]))
                let directives = manager.identified(id, replicaID: hello.replicaID, role: hello.role, now: now)
                noteTopology()
                effects += carryOut(directives, now: now)
                effects += exchangePeers(on: id, hello: hello)
                if !revoked.isEmpty { effects.append(.send(id, .revocations(revocations))) }
                effects += greet(id, hello: hello, now: now)
                effects += greetWithCheckpoint(id, now: now)
            case .learnedCertificates(let learned):
                effects += learn(learned, from: id, now: now)
            case .learnedForkProofs(let proofs):
                effects += learn(proofs, from: id, foundHere: false, now: now)
            case .learnedHeads(let heads):
                if verifiesFeeds, !heads.isEmpty { effects.append(.compareHeads(heads, keys: feedKeys)) }
            case .learnedCheckpoints(let checkpoints):
                effects += learn(checkpoints, from: id, now: now)
            case .learnedAcks(let acks):
                effects += learn(acks, from: id, now: now)
            case .basesWanted(let checkpoint, let after):
                effects += serveBases(of: checkpoint, after: after, to: id)
            case .receivedBases(let checkpoint, let page, let last):
                effects += receiveBases(page, of: checkpoint, last: last, from: id, now: now)
            case .learnedHistoryFloor(let floor):
                effects += learnFloor(floor, from: id, now: now)
            case .peerCursorHeld:
                if case .undecided = checkpoints.start { checkpoints.answered.insert(id) }
                effects += decideStartIfDue(now: now)
            case .peerStateReported(let reported):
                effects += hashForPeer(at: reported, now: now)
            case .refusedWrites(let events):
                noteRefusedWrites(events, on: id)
            case .learnedRevocations(let learned):
                effects += learn(learned, from: id, now: now)
            case .learned(let learned):
                manager.addPeers(
                    learned.filter { $0.replicaID != configuration.hello.replicaID }, source: .exchanged, now: now)
            case .readEvents(let ranges, let maxEvents, let maxBytes):
                if let page = recent.page(for: ranges, maxEvents: maxEvents, maxBytes: maxBytes, proven: verifiesFeeds)
                {
                    readFromMemory.append(page)
                    continue
                }
                let read = Effect.read(id, ranges: ranges, maxEvents: maxEvents, maxBytes: maxBytes)
                storage.reading(read, on: id)
                effects.append(read)
            case .ingest(let batch):
                // Only `process` stores, a run at a time; a lone batch here would be a bug.
                preconditionFailure("batch \(batch.batchID) reached perform; process stores batches")
            }
        }
        // Answered after the other directives, as the log's answer would be.
        for page in readFromMemory where sessions[id] != nil {
            effects += perform(sessions[id]!.eventsRead(page), on: id, now: now)
        }
        return effects
    }

    /// After messages on a connection: when the two replicas were last in
    /// sync, and the catch-up log.
    mutating func noteProgress(on id: ConnectionID, received: Int, now: Milliseconds) {
        // One read of the session (a copy of it) and of its progress, for every message.
        guard
            let (peer, progress, syncing) = sessions[id].flatMap({ session in
                session.peer.map { ($0, session.progress, session.isSyncing) }
            })
        else { return }
        if syncing && progress == (0, 0) { lastInSyncAt[peer.replicaID] = now }
        observeCatchUp(on: id, peer: peer.replicaID, received: received, remaining: progress.toReceive, now: now)
    }

    /// When this node and `replicaID` last had equal cursors.
    func lastInSyncAt(_ replicaID: String) -> Milliseconds? { lastInSyncAt[replicaID] }

    /// Logs the peer manager's moves between the mesh and the hub.
    mutating func noteTopology() {
        let state = manager.hubState
        guard state != loggedHubState else { return }
        let previous = loggedHubState
        loggedHubState = state
        switch state {
        case .relayLost(let since, let fallbackAt):
            emit(LogRecord(.info, .relayGone, "every relay is gone", [("fallback_in_ms", "\(fallbackAt - since)")]))
        case .mesh, .hub:
            guard previous != nil || state == .hub else { return }
            if previous?.topology == state.topology {
                // Back from relayLost in time: the node never left the hub.
                emit(LogRecord(.info, .relayBack, "a relay is back", [("topology", state.topology.rawValue)]))
            } else {
                emit(LogRecord(.info, .topologyChanged, "topology changed", [("topology", state.topology.rawValue)]))
            }
        }
    }

    /// Where the replica on connection `id` accepts connections, if known.
    func advert(for id: ConnectionID) -> PeerAdvert? { adverts[id] }
}

/// Counters of one node's sync since it started.
public struct SyncStatistics: Sendable, Hashable {
    public var eventsSent = 0
    public var eventsReceived = 0
    public var eventsStored = 0

    public init() {}
}
