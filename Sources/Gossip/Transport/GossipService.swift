import Dispatch
import Lifecycle
import PeerNet
import Replica
import SyncProtocol
import Synchronization

/// Runs sync over TCP for one replica: listens, dials, and carries out a
/// `SyncNode`'s effects, on one event loop thread for every socket (no
/// thread per connection, none per stranger), with storage on a
/// `StorageExecutor` of its own, so a long catch-up never stalls the
/// network.
///
/// Strangers are admitted with care (`AdmissionLimits`): a few may be in
/// the handshake at once (and fewer from one address), each has an
/// absolute deadline, frames before the handshake is done are small, and
/// refusals are logged once per kind per interval. When the process runs
/// out of file descriptors, accepting pauses and resumes by itself.
///
/// ```swift
/// let storage = try StorageExecutor(path: path, logger: sink)
/// let service = GossipService(storage: storage, clusterKey: key, configuration: config, logger: sink)
/// let port = try service.start()
/// try storage.write { try $0.append(new) }   // pushed to the peers at once
/// service.stop(reason: "shutting down")
/// ```
///
/// As a `Service`, `run()` starts it (unless `start` did) and stops it
/// with goodbyes when its task is cancelled.
///
/// `@unchecked Sendable`: every `var` is touched on the loop thread only;
/// the public methods hand work to the loop (queries wait for its answer).
public final class GossipService: Service, @unchecked Sendable {
    public struct Configuration: Sendable {
        public var listenHost = "0.0.0.0"
        /// 0: the kernel picks a free port.
        public var listenPort: UInt16 = 4100
        public var peers: [PeerAddress] = []
        public var node: SyncNode.Configuration
        public var admission = AdmissionLimits()
        /// How long a dial may take to connect.
        public var connectTimeoutMs: Int64 = 5_000
        /// How long a closing connection may take to write what is queued.
        public var lingerMs: Int64 = 2_000
        /// Whether this node offers compressed batches; they flow on a
        /// connection only when its peer offers them too (docs/protocol.md
        /// "Compressed batches"). Off: it syncs as a build from before them.
        public var wireCompression = true
        /// Stores revocations the node learned (the daemon appends them to
        /// `DIR/revocations`); called on the loop thread.
        public var storeRevocations: @Sendable ([Revocation]) -> Void = { _ in }

        public init(replicaID: String, role: NodeRole = .peer) {
            node = SyncNode.Configuration(hello: Hello(replicaID: replicaID, role: role, listenPort: 0))
        }

        /// The listen socket's backlog: room for the connection cap
        /// (`node.peers.maxConnections`, at least 128, at most 4,096), so
        /// that a burst of dials (a relay's replicas all coming back) waits
        /// in the kernel while admission takes them a batch at a time.
        public var listenBacklog: Int32 { Int32(min(max(node.peers.maxConnections, 128), 4_096)) }
    }

    public let name = "gossip"
    /// The storage the node reads and writes through.
    public let storage: StorageExecutor
    let clusterKey: ClusterKey
    var configuration: Configuration
    let logger: @Sendable (LogRecord) -> Void
    let loop: EventLoop
    private let started = Atomic<Bool>(false)
    private let stopped = Atomic<Bool>(false)

    // Loop-thread state.
    var node: SyncNode
    /// Commits on their way to the node (storage's threads add, the loop takes).
    let changes = ChangeInbox()
    /// When the loop last took them, and whether a later take is scheduled.
    var changesTakenAt: Int64 = .min / 2
    var changesTakeScheduled = false
    var connections: [ConnectionID: PeerConnection] = [:]
    var nextConnectionID: ConnectionID = 1
    var listener: Socket?
    var pending = PendingHandshakes()
    var refusals: RefusalLog
    var nodeTimer: (id: EventLoop.TimerID, at: Int64)?
    var refusalTimer: EventLoop.TimerID?
    var shuttingDown = false
    /// Called when the last connection has closed during shutdown.
    var drained: (@Sendable () -> Void)?
    /// Bytes of connections already closed, and handshakes that failed.
    var closedTraffic = (received: 0, sent: 0)
    var handshakeFailures = 0
    /// Seals catch-up batches for every connection, at a lower CPU priority.
    let catchUpSealing = CatchUpWorker(name: "peersync-catch-up-sealing")
    /// One receive buffer for every connection: reads happen one at a time.
    let receiveBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 << 10, alignment: 16)

    /// The node starts with what the log keeps of earlier runs: the
    /// certificates it learned and the fork proofs it holds (besides those
    /// `configuration.node` names).
    public init(
        storage: StorageExecutor, clusterKey: ClusterKey, configuration: Configuration,
        logger: @escaping @Sendable (LogRecord) -> Void
    ) throws {
        var configuration = configuration
        let kept = try storage.read { try SyncNode.Kept(log: $0) }
        kept.configure(&configuration.node)
        self.storage = storage
        self.clusterKey = clusterKey
        self.configuration = configuration
        self.logger = logger
        self.loop = try EventLoop(name: "peersync-gossip")
        self.refusals = RefusalLog(intervalMs: configuration.admission.refusalLogIntervalMs)
        self.node = SyncNode(configuration: configuration.node, cursor: storage.cursor(), logger: logger)
    }

    deinit {
        catchUpSealing.stop()
        receiveBuffer.deallocate()
    }

    /// Binds the listen socket and starts the loop: accepting, dialing and
    /// the node's timers. Returns the port it listens on.
    @discardableResult
    public func start() throws -> UInt16 {
        precondition(!started.exchange(true, ordering: .acquiringAndReleasing), "GossipService started twice")
        let listener = try Socket.listen(
            host: configuration.listenHost, port: configuration.listenPort, backlog: configuration.listenBacklog)
        listener.setNonBlocking()
        let port = listener.localPort
        configuration.node.hello.listenPort = port
        node = SyncNode(configuration: configuration.node, cursor: storage.cursor(), logger: logger)
        storage.observe { [self] change in
            guard change.origin != .ingest else { return }  // the node asked for those itself
            guard changes.add(change) else { return }  // the loop has yet to take the ones before
            loop.execute { [self] in takeChanges() }
        }
        loop.start()
        loop.execute { [self] in
            self.listener = listener
            watchListener()
            for peer in configuration.peers { node.addPeer(peer, source: .configured, now: loop.now) }
            carryOut(node.tick(now: loop.now))
        }
        logger(
            LogRecord(
                .info, .listening, "listening",
                [
                    ("addr", "\(configuration.listenHost):\(port)"),
                    ("max_connections", "\(configuration.node.peers.maxConnections)"),
                ]))
        return port
    }

    /// Runs until its task is cancelled, then says goodbye to every peer.
    public func run() async throws {
        if !started.load(ordering: .acquiring) { try start() }
        await Cancellation.wait()
        stop(reason: "peer shutting down")
    }

    /// Says goodbye to every peer, closes every socket and stops the loop.
    /// Returns once queued frames are written (or `lingerMs` has passed).
    /// Safe to call more than once.
    public func stop(reason: String) {
        guard started.load(ordering: .acquiring), !stopped.exchange(true, ordering: .acquiringAndReleasing) else {
            return
        }
        let done = DispatchSemaphore(value: 0)
        let accepted = loop.execute { [self] in beginShutdown(reason: reason) { done.signal() } }
        if accepted { _ = done.wait(timeout: .now() + .milliseconds(Int(configuration.lingerMs) + 1_000)) }
        loop.stop()
        catchUpSealing.stop()
    }

    /// An address found by discovery (mDNS), with the role it advertises:
    /// dialed unless its replica is already connected or the hub topology
    /// leaves it out.
    public func peerFound(_ address: PeerAddress, replicaID: String?, role: NodeRole? = nil) {
        loop.execute { [self] in
            node.addPeer(address, source: .discovered, replicaID: replicaID, role: role, now: loop.now)
            carryOut([])
        }
    }

    /// Discovery withdrew an address: it is no longer redialed. An open
    /// connection stays until it fails by itself; mDNS is not a liveness signal.
    public func peerLost(_ address: PeerAddress) {
        loop.execute { [self] in node.removePeer(address) }
    }

    /// Appends a local event; the node pushes it to the peers at once.
    public func append(_ new: NewEvent, idempotencyKey: String? = nil) throws -> StoredEvent {
        try storage.write { try $0.append(new, idempotencyKey: idempotencyKey) }
    }

    /// Every peer this node knows or is connected to; see `PeerRow`.
    public func peerTable() -> [PeerRow] {
        onLoop { service in service.node.peerTable(now: service.loop.now) } ?? []
    }

    /// The replica ids of the relays this node has a session with now (`SyncNode.connectedRelays`).
    public func connectedRelays() -> [String] {
        onLoop { $0.node.connectedRelays } ?? []
    }

    /// Mesh or hub, as the peer manager stands now; `mesh` once the loop has stopped.
    public func topology() -> Topology {
        onLoop { $0.node.manager.topology } ?? .mesh
    }

    /// This replica's state summary as the node last computed it, with the
    /// cursor it describes (`SyncNode.localState`); `nil` before the first
    /// anti-entropy round with a peer connected.
    public func localState() -> StateReport? {
        onLoop { $0.node.localState } ?? nil
    }

    /// The node's counters since `start()`.
    public func statistics() -> SyncStatistics {
        onLoop { $0.node.statistics } ?? SyncStatistics()
    }

    /// Sync counters since `start()`; see `SyncMetrics`.
    ///
    /// ```swift
    /// let metrics = service.metrics()
    /// print(metrics.bytesReceived, metrics.syncLatency.count)
    /// ```
    public func metrics() -> SyncMetrics {
        onLoop { $0.currentMetrics() } ?? SyncMetrics()
    }

    /// Installs revocations made here (`peerd revoke`): the node keeps the
    /// new ones, ends the revoked replicas' sessions and tells every peer.
    /// False once the loop has stopped.
    public func revoke(_ revocations: [Revocation]) -> Bool {
        onLoop { service in service.carryOut(service.node.learn(revocations, from: nil, now: service.loop.now)) } != nil
    }

    /// Gives the node a checkpoint made here (`peerd checkpoint make` or
    /// `take` while the daemon runs): it is recomputed from the log, taken
    /// and shown to every peer, as one a peer sent. False once the loop has stopped.
    public func give(_ checkpoint: SignedCheckpoint) -> Bool {
        onLoop { service in service.carryOut(service.node.checkpointGiven(checkpoint, now: service.loop.now)) } != nil
    }

    /// Retires a replica of an open cluster (`peerd retire`); the retired
    /// replicas after it, nil once the loop has stopped.
    public func retire(_ replicaID: String) -> Set<String>? {
        onLoop { service in
            service.carryOut(service.node.retire(replicaID, now: service.loop.now))
            return service.node.retiredReplicas
        }
    }

    /// What the node knows of checkpoints: the refused ones and where
    /// dropping history stands.
    public func checkpointStatus() -> (refused: [RefusedCheckpoint], collection: HistoryCollection)? {
        onLoop { ($0.node.refusedCheckpoints, $0.node.historyCollection) }
    }

    /// The feeds the node refused from peers for failing verification and
    /// holds no events of since; see `SyncNode.refusedFeeds`.
    public func refusedFeeds() -> [FeedRefusal] {
        onLoop { $0.node.refusedFeeds } ?? []
    }

    /// The revocations the node holds.
    public func revocations() -> [Revocation] {
        onLoop { $0.node.revocations } ?? []
    }

    /// Every open connection, with its peer and traffic.
    public func connectionSnapshots() -> [ConnectionSnapshot] {
        onLoop { $0.currentSnapshots() } ?? []
    }

    /// Runs `body` on the loop and waits for its answer; `nil` once the loop has stopped.
    func onLoop<T: Sendable>(_ body: @escaping @Sendable (GossipService) -> T) -> T? {
        if loop.inLoop { return body(self) }
        let answer = Mutex<T?>(nil)
        let done = DispatchSemaphore(value: 0)
        let accepted = loop.execute { [self] in
            let value = body(self)
            answer.withLock { $0 = value }
            done.signal()
        }
        guard accepted else { return nil }
        done.wait()
        return answer.withLock { $0 }
    }
}
