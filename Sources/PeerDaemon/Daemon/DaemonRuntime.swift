import Discovery
import Foundation
import Gossip
import Lifecycle
import PeerNet
import Replica
import SharedStore
import SyncProtocol

/// `peerd run` once its settings are known: takes the data directory's
/// lock, starts storage, sync, discovery and the HTTP API as one group of
/// services, and on SIGTERM or SIGINT stops them in reverse order (the API
/// first, storage last).
enum DaemonRuntime {
    struct Settings: Sendable {
        var listen: PeerAddress
        var peers: [PeerAddress] = []
        var mdns = true
        var logLevel = LogRecord.Level.info
        /// nil: no HTTP API.
        var http: PeerAddress? = PeerAddress("127.0.0.1:4000")
        var tokenFile: String?
        var doubleTapWindowMs: Int64 = 300
        /// `--relay`: the hub of its cluster (docs/relay.md).
        var relay = false
        var topology = TopologyMode.auto
        /// How long an `auto` replica keeps to the hub once every relay is gone.
        var relayFallbackMs: Int64 = 3_000
        /// `--max-connections`; `nil`: the role's default (`defaultMaxConnections`).
        var maxConnections: Int?
        /// `--start-from`: an empty log may start from a peer's checkpoint.
        var startsFromCheckpoints = true
        /// `--keep-history`.
        var retention = HistoryRetention.everything
        /// `--store`: the libpq connection string of a relay's shared store.
        var store: String?
        /// `--clock-offset-ms` (tests and labs only): added to the wall clock
        /// the hybrid clock and arrival times read, a device clock set wrong.
        var clockOffsetMs: Int64 = 0

        var role: NodeRole { relay ? .relay : .peer }

        /// The peer connection cap asked for: `--max-connections`, or 2,048 on
        /// a relay (the hub of a large site holds one connection per replica)
        /// and 64 on a replica.
        var wantedMaxConnections: Int { maxConnections ?? (relay ? 2_048 : 64) }
    }

    /// How long shutdown may take before the process exits anyway; the
    /// database is safe either way (every batch is one transaction).
    static let shutdownDeadline = Duration.seconds(5)

    static func run(_ settings: Settings, _ directory: DataDirectory) async throws {
        // First of all, so that a SIGTERM during startup is not lost: it
        // waits in the sequence until the group listens.
        let signals = UnixSignals([SIGTERM, SIGINT])
        try configured { try directory.requireReplica() }
        let lock = try DaemonLock.acquire(directory)
        let clusterKey = try configured { try directory.readClusterKey() }
        let logger = StandardErrorLog(minimumLevel: settings.logLevel)
        let token = try configured { try settings.tokenFile.map { try TokenFile.read($0) } }
        // An identity key that is missing is made when the log opens (a full disk then is exit 1, not 78).
        try configured {
            if FileManager.default.fileExists(atPath: directory.identityKeyPath) { _ = try directory.identityKey() }
            _ = try directory.certificate()
        }
        // The daemon's one wall clock: its log, trust checks, claim grants and health all read it.
        let clock = WallClock.system.offset(by: settings.clockOffsetMs)
        let journal = settings.store.map { SiteJournal(conninfo: $0) }
        let storage = try directory.openStorage(
            clock: clock, sharedStore: journal, cluster: clusterKey.fingerprint, logger: logger.write)
        let changes = ChangeSignal()
        storage.observe { _ in changes.bump() }
        let listener = settings.store.map { conninfo in
            StoreListener(
                conninfo: conninfo,
                onState: { connected, error in
                    logger.write(
                        connected
                            ? LogRecord(.info, .sharedStoreConnected, "the shared store is reachable")
                            : LogRecord(
                                .warning, .sharedStoreUnreachable,
                                "the shared store is unreachable; writes are refused until it is back",
                                [("error", error ?? "")]))
                },
                onChange: { try? storage.catchUpSharedStore() })
        }
        listener?.start()
        defer { listener?.stop() }

        var configuration = GossipService.Configuration(replicaID: storage.replicaID, role: settings.role)
        configuration.node.peers.topology = settings.topology
        configuration.node.peers.relayFallbackMs = settings.relayFallbackMs
        configuration.node.peers.maxConnections = peerCap(settings, handshakes: configuration.admission, logger: logger)
        // A relay on a shared store copies the store's events; its offsets are the store's, not a checkpoint's.
        configuration.node.startsFromCheckpoints = settings.startsFromCheckpoints && settings.store == nil
        configuration.node.retention = settings.retention
        configuration.node.retired = try configured { try directory.retired() }
        configuration.listenHost = settings.listen.host
        configuration.listenPort = settings.listen.port
        configuration.peers = settings.peers
        let identity = try configured { try directory.identity(replicaID: storage.replicaID) }
        configuration.node.identity = identity
        if let journal {
            let own = identity.certificate ?? Certificate.selfSigned(by: identity.key, replicaID: storage.replicaID)
            journal.share(ownCertificate: own.bytes, replicaID: storage.replicaID)
            try? storage.catchUpSharedStore()
        }
        // A replica that joined with an invite accepts only peers certified by the same admin.
        let trust = TrustPolicy(
            adminKey: identity.certificate?.adminKey, wallClockMs: { UInt64(max(0, clock.nowMs())) })
        configuration.node.session.trust = trust
        configuration.node.revocations = try configured { try directory.revocations() }
        // Before the node loads the certificates the log keeps: those it no longer needs go.
        let revoked = configuration.node.revocations.filter { $0.adminKey == trust.adminKey }.map(\.replicaID)
        do {
            try storage.pruneCertificates(
                CertificateRetention(
                    ownReplicaID: storage.replicaID, revoked: Set(revoked), nowMs: trust.wallClockMs()))
        } catch {
            logger.write(
                LogRecord(
                    .warning, .storageFailed, "cannot prune certificates",
                    [("while", "prune certificates"), ("error", "\(error)")]))
        }
        configuration.storeRevocations = { revocations in
            do {
                try directory.store(revocations)
            } catch {
                logger.write(
                    LogRecord(
                        .error, .revocationsUnstored, "cannot store revocations; they hold until a restart",
                        [("error", "\(error)")]))
            }
        }
        if let certificate = identity.certificate {
            do {
                try certificate.check(
                    replicaID: storage.replicaID, publicKey: identity.key.publicKey, nowMs: trust.wallClockMs())
            } catch {
                logger.write(
                    LogRecord(
                        .warning, .certificateExpired,
                        "this replica's certificate has expired: peers refuse it once their clocks pass it",
                        [("reason", "\(error)")]))
            }
        }
        let gossip = try GossipService(
            storage: storage, clusterKey: clusterKey, configuration: configuration, logger: logger.write)
        let port = try gossip.start()
        let grantor =
            settings.relay
            ? ClaimGrantor(
                storage: storage, clock: clock, relaysConnected: { gossip.connectedRelays() }, log: logger.write)
            : nil
        grantor?.start()
        defer { grantor?.stop() }

        var http: HTTPAPIService?
        var httpAddress: String?
        if let address = settings.http {
            let api = DaemonAPI(
                service: gossip, storage: storage,
                reads: try ReadReplica(
                    path: directory.databasePath, onError: { storage.noteFault($0, while: "read") }),
                changes: changes,
                settings: DaemonAPI.Settings(
                    role: settings.role,
                    identity: IdentityReport(publicKey: identity.key.publicKey, certificate: identity.certificate),
                    certificate: identity.certificate,
                    topologyMode: settings.topology, token: token,
                    deviceTokens: DeviceTokens.Watched(path: DeviceTokens.path(in: directory.path)),
                    doubleTapWindowMs: settings.doubleTapWindowMs,
                    maxConnections: configuration.node.peers.maxConnections, sharedStore: listener),
                metrics: DaemonMetrics(), log: logger.write)
            let service = HTTPAPIService(
                api: api,
                peerDescriptors: configuration.node.peers.maxConnections + configuration.admission.maxPending,
                log: logger.write)
            do {
                let port = try service.start(on: address)
                httpAddress = PeerAddress(host: address.host, port: port).description
            } catch {
                gossip.stop(reason: "peer shutting down")
                storage.close()
                throw error
            }
            http = service
        }
        do {
            try DaemonInfo(
                pid: getpid(), replica_id: storage.replicaID, http: httpAddress, token_file: settings.tokenFile
            ).write(in: directory)
        } catch {
            // Nothing was announced yet: stop what runs, say why.
            http?.server.stop()
            gossip.stop(reason: "peer shutting down")
            storage.close()
            throw error
        }
        // Ready: what scripts and tests wait for, once daemon.json is in place.
        say("listening on \(settings.listen.host):\(port)")
        if let httpAddress { say("http on \(httpAddress)") }
        logger.write(
            LogRecord(
                .info, .replicaRunning, "replica running",
                [
                    ("replica", storage.replicaID), ("cluster", clusterKey.fingerprint), ("role", "\(settings.role)"),
                    ("topology", settings.topology.rawValue),
                    ("peers", "\(settings.peers.count)"), ("http", httpAddress ?? "off"),
                ]))
        let discovery =
            settings.mdns
            ? discoveryService(
                MDNSAdvertisement(
                    replicaID: storage.replicaID, port: port, clusterFingerprint: clusterKey.fingerprint,
                    role: settings.relay ? .relay : .peer, protocolVersion: WireProtocol.version),
                gossip: gossip, logger: logger)
            : nil

        let optional: [(any Service)?] = [discovery, http]
        let services: [any Service] = [storage, gossip] + optional.compactMap { $0 }
        let group = ServiceGroup(services, shutdownDeadline: shutdownDeadline) { event in
            switch event {
            case .stopping(let signal):
                logger.write(LogRecord(.info, .shutdownStarted, "shutting down", [("signal", signal)]))
            case .serviceStopped(let name):
                logger.write(LogRecord(.debug, .serviceStopped, "service stopped", [("service", name)]))
            case .serviceFailed(let name, let error):
                logger.write(
                    LogRecord(.error, .serviceFailed, "service failed", [("service", name), ("error", "\(error)")]))
            case .deadlinePassed(let name):
                logger.write(
                    LogRecord(
                        .warning, .shutdownOverdue, "shutdown took too long; exiting with work abandoned",
                        [("waiting_for", name)]))
            }
        }
        _ = try await group.run(stoppingOn: signals)
        DaemonInfo.remove(in: directory)
        withExtendedLifetime(lock) {}
        logger.write(LogRecord(.info, .replicaStopped, "stopped"))
    }

    /// Runs `body`, a step that reads the daemon's configuration (DIR, its
    /// keys and certificate, the token file), and makes what it throws a
    /// ``StartupConfigurationError``: a restart cannot fix it (exit code 78).
    private static func configured<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch {
            throw StartupConfigurationError(description: "\(error)")
        }
    }

    /// The peer connection cap the descriptor limit can carry beside the
    /// handshakes and the HTTP server; logs `peers.descriptors_low` when it
    /// is lower than asked (raise `ulimit -n`, or `LimitNOFILE=` in the unit).
    private static func peerCap(
        _ settings: Settings, handshakes: AdmissionLimits, logger: StandardErrorLog
    ) -> Int {
        let wanted = settings.wantedMaxConnections
        let cap = DescriptorBudget.peerConnections(
            wanted: wanted, handshakes: handshakes.maxPending,
            http: settings.http == nil ? 0 : HTTPServer.Limits().connectionLimit)
        if cap < wanted {
            let limit = DescriptorBudget.softLimit(raisedTowards: 0).map { "\($0)" } ?? "unlimited"
            logger.write(
                LogRecord(
                    .warning, .peersDescriptorsLow,
                    "fewer peer connections than --max-connections asks: the descriptor limit (ulimit -n) is too low",
                    [("wanted", "\(wanted)"), ("max_connections", "\(cap)"), ("descriptor_limit", limit)]))
        }
        return cap
    }

    private static func say(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    /// Discovery that hands every peer found or lost to sync. mDNS only
    /// says where peers are; whether one is alive is for dialing and
    /// keepalive to find out.
    private static func discoveryService(
        _ advertisement: MDNSAdvertisement, gossip: GossipService, logger: StandardErrorLog
    ) -> MDNSDiscovery {
        MDNSDiscovery(advertisement: advertisement) { event in
            switch event {
            case .found(let peer):
                logger.write(
                    LogRecord(
                        .info, .peerDiscovered, "peer discovered",
                        [("peer", peer.replicaID), ("addr", peer.address.description), ("role", "\(peer.role)")]))
                gossip.peerFound(
                    peer.address, replicaID: peer.replicaID, role: peer.role == .relay ? .relay : .peer)
            case .lost(let peer):
                logger.write(
                    LogRecord(
                        .info, .peerWithdrawn, "peer withdrawn",
                        [("peer", peer.replicaID), ("addr", peer.address.description)]))
                gossip.peerLost(peer.address)
            case .warning(let text):
                logger.write(LogRecord(.warning, .discoveryNotice, text, [("component", "mdns")]))
            case .info(let text):
                logger.write(LogRecord(.info, .discoveryNotice, text, [("component", "mdns")]))
            }
        }
    }
}
