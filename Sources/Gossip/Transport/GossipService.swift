import Foundation
import PeerNet
import Replica
import SyncProtocol

/// Runs sync over TCP for one replica: listens, dials, and carries out the
/// `SyncNode`'s effects on real sockets.
///
/// All state lives on one serial queue (`queue`): the node, its event log
/// and the connection table. Sockets block only on their own threads.
/// `@unchecked Sendable` because every mutable property is touched on
/// `queue` alone.
///
/// ```swift
/// let service = try GossipService(log: log, clusterKey: key, configuration: config, logger: sink)
/// let port = try service.start()
/// service.localChanged()   // after appending in-process
/// service.stop(reason: "shutting down")
/// ```
public final class GossipService: @unchecked Sendable {
    public struct Configuration: Sendable {
        public var listenHost = "0.0.0.0"
        /// 0: the kernel picks a free port.
        public var listenPort: UInt16 = 4100
        public var peers: [PeerAddress] = []
        public var node: SyncNode.Configuration
        /// How often the node's timer runs (peer dialing, local change check).
        public var tickIntervalMs = 50

        public init(replicaID: String, role: NodeRole = .peer) {
            node = SyncNode.Configuration(hello: Hello(replicaID: replicaID, role: role, listenPort: 0))
        }
    }

    private let queue = DispatchQueue(label: "peersync.gossip")
    private let clusterKey: ClusterKey
    private var configuration: Configuration
    private let log: EventLog
    private let logger: @Sendable (LogRecord) -> Void
    private var node: SyncNode?
    private var connections: [ConnectionID: PeerConnection] = [:]
    private let inbox = MessageInbox()
    private var nextConnectionID: ConnectionID = 1
    private var listener: Socket?
    private var timer: DispatchSourceTimer?
    private var stopped = false
    private let origin = DispatchTime.now().uptimeNanoseconds
    /// Bytes of connections already closed, for `metrics()`.
    private var closedTraffic = (received: 0, sent: 0)
    private var handshakeFailures = 0

    public init(
        log: EventLog, clusterKey: ClusterKey, configuration: Configuration,
        logger: @escaping @Sendable (LogRecord) -> Void
    ) {
        self.log = log
        self.clusterKey = clusterKey
        self.configuration = configuration
        self.logger = logger
    }

    /// Binds the listen socket, starts accepting, dialing and the timer.
    /// Returns the port it listens on.
    @discardableResult
    public func start() throws -> UInt16 {
        let listener = try Socket.listen(host: configuration.listenHost, port: configuration.listenPort)
        let port = listener.localPort
        configuration.node.hello.listenPort = port
        try queue.sync {
            self.listener = listener
            let node = try SyncNode(log: log, configuration: configuration.node, logger: logger)
            for peer in configuration.peers { node.addPeer(peer, source: .configured, now: now) }
            self.node = node
            let timer = DispatchSource.makeTimerSource(queue: queue)
            timer.schedule(deadline: .now(), repeating: .milliseconds(configuration.tickIntervalMs))
            timer.setEventHandler { [self] in perform(node.tick(now: now)) }
            timer.resume()
            self.timer = timer
        }
        let thread = Thread { [self] in acceptLoop(listener) }
        thread.name = "peersync-accept"
        thread.start()
        logger(LogRecord(.info, "listening", [("addr", "\(configuration.listenHost):\(port)")]))
        return port
    }

    /// Pushes events appended in this process to the peers that lack them.
    public func localChanged() {
        queue.async { [self] in
            guard let node, !stopped else { return }
            perform(node.localChanged(now: now))
        }
    }

    /// Runs `body` on the service's queue with the node (for status reads).
    public func withNode<T: Sendable>(_ body: (SyncNode) throws -> T) rethrows -> T? {
        try queue.sync { try node.map(body) }
    }

    /// Appends a local event and pushes it to the peers at once.
    public func append(_ new: NewEvent, idempotencyKey: String? = nil) throws -> StoredEvent {
        try queue.sync {
            let stored = try log.append(new, idempotencyKey: idempotencyKey)
            if let node, !stopped { perform(node.localChanged(now: now)) }
            return stored
        }
    }

    /// Runs `body` with the event log on the service's queue, the only
    /// place the log may be used while the service runs.
    public func withLog<T>(_ body: (EventLog) throws -> T) rethrows -> T {
        try queue.sync { try body(log) }
    }

    /// Calls `handler` (on the service's queue) with the events each ingest
    /// from a peer stored.
    public func onStored(_ handler: @escaping @Sendable ([StoredEvent]) -> Void) {
        queue.sync { node?.onStored = handler }
    }

    /// Every peer this node knows or is connected to; see `PeerRow`.
    public func peerTable() -> [PeerRow] {
        queue.sync { node?.peerTable(now: now) ?? [] }
    }

    /// An address found by discovery (mDNS): dialed unless its replica is
    /// already connected.
    public func peerFound(_ address: PeerAddress, replicaID: String?) {
        queue.async { [self] in node?.addPeer(address, source: .discovered, replicaID: replicaID, now: now) }
    }

    /// Discovery withdrew an address: it is no longer redialed. An open
    /// connection stays until it fails by itself; mDNS is not a liveness signal.
    public func peerLost(_ address: PeerAddress) {
        queue.async { [self] in node?.removePeer(address) }
    }

    /// Sync counters since `start()`; see `SyncMetrics`.
    ///
    /// ```swift
    /// let metrics = service.metrics()
    /// print(metrics.bytesReceived, metrics.syncLatency.count)
    /// ```
    public func metrics() -> SyncMetrics {
        queue.sync {
            var metrics = node?.metrics() ?? SyncMetrics()
            metrics.connectionsOpen = connections.count
            metrics.handshakeFailures = handshakeFailures
            metrics.bytesReceived = closedTraffic.received
            metrics.bytesSent = closedTraffic.sent
            for connection in connections.values {
                let bytes = connection.bytes
                metrics.bytesReceived += bytes.received
                metrics.bytesSent += bytes.sent
            }
            return metrics
        }
    }

    /// This replica's state summary as the node last computed it, with the
    /// cursor it describes (`SyncNode.localState`); `nil` before the first
    /// anti-entropy round with a peer connected.
    public func localState() -> StateReport? {
        queue.sync { node?.localState }
    }

    /// Every open connection, with its peer and traffic.
    public func connectionSnapshots() -> [ConnectionSnapshot] {
        queue.sync {
            connections.values.sorted { $0.id < $1.id }.map { connection in
                let session = node?.sessions[connection.id]
                let bytes = connection.bytes
                return ConnectionSnapshot(
                    id: connection.id, peer: session?.peer, remoteHost: connection.remoteHost,
                    dialed: connection.dialed, bytesReceived: bytes.received, bytesSent: bytes.sent,
                    eventsToReceive: session?.progress.toReceive ?? 0, eventsToSend: session?.progress.toSend ?? 0)
            }
        }
    }

    /// Says goodbye to every peer, closes every socket and stops the timer.
    /// Safe to call more than once; returns once queued frames are written.
    public func stop(reason: String) {
        let open: [PeerConnection] = queue.sync {
            guard !stopped else { return [] }
            stopped = true
            timer?.cancel()
            listener?.shutdown()
            if let node { perform(node.shutdown(reason: reason, now: now)) }
            return Array(connections.values)
        }
        for connection in open { connection.close(reason: reason) }
        for connection in open { connection.flush() }
    }

    private var now: Milliseconds { Milliseconds((DispatchTime.now().uptimeNanoseconds - origin) / 1_000_000) }

    private func perform(_ effects: [SyncNode.Effect]) {
        for effect in effects {
            switch effect {
            case .send(let id, let message):
                guard let connection = connections[id] else { continue }
                do {
                    try connection.send(message)
                } catch {
                    logger(LogRecord(.error, "cannot send", [("conn", "\(id)"), ("error", "\(error)")]))
                    connection.close(reason: "cannot send: \(error)")
                }
            case .dial(let address):
                dial(address)
            case .close(let id, let reason):
                connections[id]?.close(reason: reason)
            }
        }
    }

    private func dial(_ address: PeerAddress) {
        let id = nextConnectionID
        nextConnectionID += 1
        Thread.detachNewThread { [self] in
            do {
                let socket = try Socket.connect(host: address.host, port: address.port)
                let connection = PeerConnection(
                    id: id, socket: socket, dialed: address, clusterKey: clusterKey, callbacks: callbacks)
                queue.async { [self] in
                    guard !stopped else { return connection.close(reason: "shutting down") }
                    connections[id] = connection
                    connection.start()
                }
            } catch {
                queue.async { [self] in node?.dialFailed(address, reason: "\(error)", now: now) }
            }
        }
    }

    private func acceptLoop(_ listener: Socket) {
        while true {
            guard let socket = try? listener.accept() else { return }
            queue.async { [self] in
                guard !stopped else { return }
                let id = nextConnectionID
                nextConnectionID += 1
                let connection = PeerConnection(
                    id: id, socket: socket, dialed: nil, clusterKey: clusterKey, callbacks: callbacks)
                connections[id] = connection
                connection.start()
            }
        }
    }

    private var callbacks: PeerConnection.Callbacks {
        PeerConnection.Callbacks(
            established: { [self] connection in
                queue.async { [self] in
                    guard let node, connections[connection.id] != nil else { return }
                    logger(
                        LogRecord(
                            .info, "connection established",
                            [("conn", "\(connection.id)"), ("remote", connection.remoteHost)]
                                + (connection.dialed.map { [("dialed", $0.description)] } ?? [])))
                    perform(
                        node.connectionOpened(
                            connection.id, dialed: connection.dialed, remoteHost: connection.remoteHost, now: now))
                }
            },
            received: { [self] connection, message in
                guard inbox.add(message, for: connection.id) else { return }
                queue.async { [self] in
                    let messages = inbox.take(connection.id)
                    guard let node, connections[connection.id] != nil else { return }
                    perform(node.received(messages, on: connection.id, now: now))
                }
            },
            closed: { [self] connection, reason, wasEstablished in
                queue.async { [self] in
                    if connections.removeValue(forKey: connection.id) != nil {
                        let bytes = connection.bytes
                        closedTraffic.received += bytes.received
                        closedTraffic.sent += bytes.sent
                        if !wasEstablished && !stopped { handshakeFailures += 1 }
                    }
                    let level: LogRecord.Level = wasEstablished ? .info : .warning
                    logger(
                        LogRecord(
                            level, wasEstablished ? "connection closed" : "connection refused",
                            [("conn", "\(connection.id)"), ("remote", connection.remoteHost), ("reason", reason)]))
                    guard let node else { return }
                    if wasEstablished {
                        node.connectionClosed(connection.id, now: now)
                    } else if let dialed = connection.dialed {
                        node.dialFailed(dialed, reason: reason, now: now)
                    }
                }
            })
    }
}
