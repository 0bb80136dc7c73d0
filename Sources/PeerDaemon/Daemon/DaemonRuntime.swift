import Discovery
import Foundation
import Gossip
import PeerNet
import Replica
import SyncProtocol

/// `peerd run` once its settings are known: takes the data directory's
/// lock, starts sync, discovery and the HTTP API, and shuts them down in
/// order on SIGTERM or SIGINT.
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
    }

    /// How long shutdown may take before the process exits anyway; the
    /// database is safe either way (every batch is one transaction).
    static let shutdownDeadlineSeconds = 5

    static func start(_ settings: Settings, _ directory: DataDirectory) throws -> Never {
        // First of all, so that a SIGTERM during startup is not lost: the
        // handlers run on the main queue, once `dispatchMain` serves it,
        // when everything below has started.
        for (number, name) in [(SIGTERM, "TERM"), (SIGINT, "INT")] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .main)
            source.setEventHandler { onSignal?(name) }
            source.resume()
            signalSources.append(source)
        }
        let lock = try DaemonLock.acquire(directory)
        let clusterKey = try directory.readClusterKey()
        let log = try directory.openLog()
        let token = try settings.tokenFile.map { try TokenFile.read($0) }
        let logger = StandardErrorLog(minimumLevel: settings.logLevel)

        var configuration = GossipService.Configuration(replicaID: log.replicaID)
        configuration.listenHost = settings.listen.host
        configuration.listenPort = settings.listen.port
        configuration.peers = settings.peers
        let service = GossipService(
            log: log, clusterKey: clusterKey, configuration: configuration, logger: logger.write)
        let changes = ChangeSignal()
        let port = try service.start()
        service.onStored { _ in changes.bump() }

        var api: DaemonAPI?
        var server: HTTPServer?
        var httpAddress: String?
        if let http = settings.http {
            let reads = try ReadReplica(path: directory.databasePath)
            let metrics = DaemonMetrics()
            let daemonAPI = DaemonAPI(
                service: service, reads: reads, changes: changes,
                settings: DaemonAPI.Settings(token: token, doubleTapWindowMs: settings.doubleTapWindowMs),
                metrics: metrics, log: logger.write)
            let httpServer = HTTPServer(
                handler: { daemonAPI.handle($0) }, refused: { metrics.countRequest(status: $0) }, log: logger.write)
            let httpPort: UInt16
            do {
                httpPort = try httpServer.start(host: http.host, port: http.port)
            } catch {
                service.stop(reason: "peer shutting down")
                throw CommandError(
                    "cannot serve the HTTP API on \(http): \(error); pick another with --http HOST:PORT, or --http off")
            }
            httpAddress = PeerAddress(host: http.host, port: httpPort).description
            api = daemonAPI
            server = httpServer
        }
        try DaemonInfo(pid: getpid(), replica_id: log.replicaID, http: httpAddress, token_file: settings.tokenFile)
            .write(in: directory)
        // Ready: what scripts and tests wait for, once daemon.json is in place.
        say("listening on \(settings.listen.host):\(port)")
        if let httpAddress { say("http on \(httpAddress)") }
        logger.write(
            LogRecord(
                .info, "replica running",
                [
                    ("replica", log.replicaID), ("cluster", clusterKey.fingerprint),
                    ("peers", "\(settings.peers.count)"),
                    ("http", httpAddress ?? "off"),
                ]))

        let discovery =
            settings.mdns
            ? startDiscovery(
                MDNSAdvertisement(
                    replicaID: log.replicaID, port: port, clusterFingerprint: clusterKey.fingerprint,
                    protocolVersion: WireProtocol.version),
                service: service, logger: logger)
            : nil

        let shutdown = { (signalName: String) in
            logger.write(LogRecord(.info, "shutting down", [("signal", signalName)]))
            let deadline = DispatchSource.makeTimerSource(queue: .global())
            deadline.schedule(deadline: .now() + .seconds(shutdownDeadlineSeconds))
            deadline.setEventHandler {
                logger.write(LogRecord(.warning, "shutdown took too long; exiting with work abandoned"))
                DaemonInfo.remove(in: directory)
                exit(0)
            }
            deadline.resume()
            // New requests get 503 and change streams end; no new connections.
            api?.beginShutdown()
            server?.quiesce()
            discovery?.stop()
            service.stop(reason: "peer shutting down")
            server?.stop()
            DaemonInfo.remove(in: directory)
            withExtendedLifetime(lock) {}
            logger.write(LogRecord(.info, "stopped"))
            exit(0)
        }
        onSignal = shutdown
        dispatchMain()
    }

    private static func say(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    /// Publishes this node with mDNS and hands every peer found or lost to
    /// the sync service. mDNS only says where peers are; whether one is
    /// alive is for dialing and keepalive to find out.
    private static func startDiscovery(
        _ advertisement: MDNSAdvertisement, service: GossipService, logger: StandardErrorLog
    ) -> MDNSDiscovery {
        let discovery = MDNSDiscovery(advertisement: advertisement) { event in
            switch event {
            case .found(let peer):
                logger.write(
                    LogRecord(
                        .info, "peer discovered",
                        [("peer", peer.replicaID), ("addr", peer.address.description), ("role", "\(peer.role)")]))
                service.peerFound(peer.address, replicaID: peer.replicaID)
            case .lost(let peer):
                logger.write(
                    LogRecord(.info, "peer withdrawn", [("peer", peer.replicaID), ("addr", peer.address.description)]))
                service.peerLost(peer.address)
            case .warning(let text):
                logger.write(LogRecord(.warning, text, [("component", "mdns")]))
            case .info(let text):
                logger.write(LogRecord(.info, text, [("component", "mdns")]))
            }
        }
        discovery.start()
        return discovery
    }

    nonisolated(unsafe) private static var signalSources: [any DispatchSourceSignal] = []
    /// What SIGTERM and SIGINT do; set once everything started (main queue only).
    nonisolated(unsafe) private static var onSignal: ((String) -> Void)?
}
