import Discovery
import Foundation
import Gossip
import Replica

/// `peerd run`: the replica as a daemon that syncs with its peers until
/// SIGTERM or SIGINT.
enum RunCommand {
    static let command = Command(
        path: ["run"],
        usage: "run [--listen HOST:PORT] [--peer HOST:PORT ...] [--no-mdns] [--log-level LEVEL]",
        summary: """
            Runs the replica: listens for peers (default 0.0.0.0:4100; port 0 picks a free port and \
            prints it), publishes and browses _peersync._tcp with mDNS (Avahi) unless --no-mdns, dials \
            every --peer and every peer found, syncs, and pushes new events live, including ones that \
            `peerd item ...` writes to the same data directory while it runs. Logs go to stderr, one \
            key=value line per event; --log-level is debug, info (default), warning or error. \
            SIGTERM or SIGINT stops it cleanly.
            """,
        flags: ["no-mdns"],
        options: ["listen", "peer", "log-level"],
        repeatable: ["peer"], acceptsConfig: true,
        run: { arguments, directory in
            _ = try arguments.positional()
            try run(arguments, directory)
        })

    private static func run(_ arguments: Arguments, _ directory: DataDirectory) throws {
        let listen = try address(arguments.options["listen"] ?? "0.0.0.0:4100", option: "listen")
        let peers = try (arguments.repeated["peer"] ?? []).map { try address($0, option: "peer") }
        let levelName = arguments.options["log-level"] ?? "info"
        guard let level = LogRecord.Level(rawValue: levelName) else {
            throw UsageError("--log-level must be debug, info, warning or error, not \"\(levelName)\"")
        }
        let clusterKey = try directory.readClusterKey()
        let log = try directory.openLog()
        let logger = StandardErrorLog(minimumLevel: level)

        var configuration = GossipService.Configuration(replicaID: log.replicaID)
        configuration.listenHost = listen.host
        configuration.listenPort = listen.port
        configuration.peers = peers
        let service = GossipService(
            log: log, clusterKey: clusterKey, configuration: configuration, logger: logger.write)
        let port = try service.start()
        FileHandle.standardOutput.write(Data("listening on \(listen.host):\(port)\n".utf8))
        logger.write(
            LogRecord(
                .info, "replica running",
                [("replica", log.replicaID), ("cluster", clusterKey.fingerprint), ("peers", "\(peers.count)")]))

        let discovery =
            arguments.has("no-mdns")
            ? nil
            : startDiscovery(
                MDNSAdvertisement(replicaID: log.replicaID, port: port, clusterKey: clusterKey),
                service: service, logger: logger)

        let peersPath = PeersFile.path(in: directory)
        let replicaID = log.replicaID
        let peersTimer = DispatchSource.makeTimerSource(queue: .global())
        peersTimer.schedule(deadline: .now(), repeating: .seconds(1))
        peersTimer.setEventHandler {
            let file = PeersFile(
                replicaID: replicaID, rows: service.peerTable(), nowMs: Int64(Date().timeIntervalSince1970 * 1000))
            do {
                try file.write(to: peersPath)
            } catch {
                logger.write(LogRecord(.warning, "cannot write the peer list", [("error", "\(error)")]))
            }
        }
        peersTimer.resume()
        timers.append(peersTimer)

        for signalNumber in [SIGTERM, SIGINT] {
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .main)
            source.setEventHandler {
                logger.write(LogRecord(.info, "shutting down", [("signal", signalNumber == SIGTERM ? "TERM" : "INT")]))
                discovery?.stop()
                service.stop(reason: "peer shutting down")
                try? FileManager.default.removeItem(atPath: peersPath)
                logger.write(LogRecord(.info, "stopped"))
                exit(0)
            }
            source.resume()
            signalSources.append(source)
        }
        dispatchMain()
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
    nonisolated(unsafe) private static var timers: [any DispatchSourceTimer] = []

    private static func address(_ text: String, option: String) throws -> PeerAddress {
        guard let address = PeerAddress(text) else {
            throw UsageError("--\(option) needs HOST:PORT, not \"\(text)\"")
        }
        return address
    }
}
