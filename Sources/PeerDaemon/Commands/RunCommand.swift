import Foundation
import Gossip
import PeerNet
import SyncProtocol

/// `peerd run`: the replica as a daemon that syncs with its peers and
/// serves the HTTP API until SIGTERM or SIGINT.
enum RunCommand {
    static let command = Command(
        path: ["run"],
        usage: """
            run [--listen HOST:PORT] [--peer HOST:PORT ...] [--no-mdns] [--log-level LEVEL] \
            [--http HOST:PORT|off] [--http-token-file FILE] [--double-tap-ms N] [--relay] \
            [--topology auto|mesh|hub] [--relay-fallback-ms N] [--max-connections N] \
            [--start-from checkpoint|replay] \
            [--keep-history all|Nd] [--store postgresql://…] \(testUsage)[--config FILE]
            """,
        summary: """
            Runs the replica: listens for peers (default 0.0.0.0:4100; port 0 picks a free port and \
            prints it), publishes and browses _peersync._tcp with mDNS (Avahi) unless --no-mdns, dials \
            every --peer and every peer found, syncs, and pushes new events live, including ones that \
            `peerd item ...` writes to the same data directory while it runs. Serves the HTTP API \
            (docs/http-api.md) on --http (default 127.0.0.1:4000; `off` for none); an address other \
            than loopback needs --http-token-file, a file holding the bearer token every request must \
            send. --double-tap-ms (default 300, 0 = off): identical writes to one item within that \
            window store one event. Logs go to stderr, one key=value line per event; --log-level is \
            debug, info (default), warning or error. One daemon per data directory. SIGTERM or SIGINT \
            stops it cleanly. --relay runs the node as a relay (docs/relay.md): it advertises \
            role=relay and serves as the hub its replicas sync through. --topology (default auto, \
            docs/topology.md): auto syncs through relays while one is connected and falls back to the \
            full mesh --relay-fallback-ms (default 3000) after the last one is gone; mesh ignores \
            relays; hub dials relays only and never falls back. --max-connections (default 2048 with \
            --relay, else 64): the most peer connections open at once, accepted and dialed; lowered, \
            with a warning, to what the descriptor limit (ulimit -n) can carry. --start-from (default checkpoint, \
            docs/operations.md "Checkpoints"): an empty replica starts from the newest checkpoint a peer \
            shows that it trusts, plus the events after it; replay takes the whole history instead. \
            --keep-history (default all): with Nd, the events a checkpoint covers are dropped once every \
            member of the cluster acknowledged it and it is N days old (0d: at once). --store (relays \
            only, docs/relay.md "Relays on a shared PostgreSQL"): a libpq connection string; the relays \
            given the same database act as one relay, and the relay acknowledges a write only once \
            PostgreSQL committed it.\(testSummary)
            """,
        flags: ["no-mdns", "relay"],
        options: Set([
            "listen", "peer", "log-level", "http", "http-token-file", "double-tap-ms", "topology", "relay-fallback-ms",
            "max-connections", "start-from", "keep-history", "store",
        ]).union(testOptions),
        repeatable: ["peer"], acceptsConfig: true,
        run: { arguments, directory in
            _ = try arguments.positional()
            try await DaemonRuntime.run(try settings(arguments), directory)
        })

    /// The command line (and config file) as daemon settings.
    static func settings(_ arguments: Arguments) throws -> DaemonRuntime.Settings {
        var settings = DaemonRuntime.Settings(
            listen: try address(arguments.options["listen"] ?? "0.0.0.0:4100", option: "listen"))
        settings.peers = try (arguments.repeated["peer"] ?? []).map { try address($0, option: "peer") }
        settings.mdns = !arguments.has("no-mdns")
        let levelName = arguments.options["log-level"] ?? "info"
        guard let level = LogRecord.Level(rawValue: levelName) else {
            throw UsageError.badValue(levelName, of: "log-level", "must be debug, info, warning or error")
        }
        settings.logLevel = level
        let http = arguments.options["http"] ?? "127.0.0.1:4000"
        settings.http = http == "off" ? nil : try address(http, option: "http")
        settings.tokenFile = arguments.options["http-token-file"]
        if let http = settings.http, !isLoopback(http.host), settings.tokenFile == nil {
            throw UsageError(
                "--http \(http) is reachable from other machines: give --http-token-file FILE (a bearer token), "
                    + "or bind 127.0.0.1", option: "http")
        }
        if let text = arguments.options["double-tap-ms"] {
            guard let window = Int64(text), window >= 0 else {
                throw UsageError.badValue(text, of: "double-tap-ms", "must be a whole number of 0 or more")
            }
            settings.doubleTapWindowMs = window
        }
        settings.relay = arguments.has("relay")
        if let text = arguments.options["topology"] {
            guard let mode = TopologyMode(rawValue: text) else {
                throw UsageError.badValue(text, of: "topology", "must be auto, mesh or hub")
            }
            settings.topology = mode
        }
        if let text = arguments.options["relay-fallback-ms"] {
            guard let fallback = Int64(text), fallback >= 0 else {
                throw UsageError.badValue(text, of: "relay-fallback-ms", "must be a whole number of 0 or more")
            }
            settings.relayFallbackMs = fallback
        }
        if let text = arguments.options["max-connections"] {
            guard let cap = Int(text), (1...maximumConnections).contains(cap) else {
                throw UsageError.badValue(
                    text, of: "max-connections", "must be a whole number from 1 to \(maximumConnections)")
            }
            settings.maxConnections = cap
        }
        switch arguments.options["start-from"] ?? "checkpoint" {
        case "checkpoint": settings.startsFromCheckpoints = true
        case "replay": settings.startsFromCheckpoints = false
        case let text: throw UsageError.badValue(text, of: "start-from", "must be checkpoint or replay")
        }
        if let text = arguments.options["keep-history"] {
            guard let retention = HistoryRetention(text) else {
                throw UsageError.badValue(text, of: "keep-history", "must be all, or a number of days such as 30d")
            }
            settings.retention = retention
        }
        if let store = arguments.options["store"] {
            guard settings.relay else {
                throw UsageError(
                    "--store is a relay's shared store: give --relay as well (a replica keeps its own log)",
                    option: "store")
            }
            guard !store.trimmingCharacters(in: .whitespaces).isEmpty else {
                throw UsageError.badValue(store, of: "store", "needs a PostgreSQL connection string")
            }
            settings.store = store
        }
        #if PEERD_TEST_FLAGS
            if let text = arguments.options["clock-offset-ms"] {
                guard let offset = Int64(text) else {
                    throw UsageError.badValue(text, of: "clock-offset-ms", "must be a whole number of milliseconds")
                }
                settings.clockOffsetMs = offset
            }
        #endif
        return settings
    }

    #if PEERD_TEST_FLAGS
        /// Options for tests and the lab (a debug build's; a release `peerd` has none: docs/lab.md).
        private static let testOptions: Set<String> = ["clock-offset-ms"]
        private static let testUsage = "[--clock-offset-ms N] "
        private static let testSummary = """
             --clock-offset-ms N (debug builds only, for tests and labs) shifts the wall clock the \
            replica's hybrid clock and arrival times read by N ms (negative: behind), as on a device \
            whose clock is set wrong.
            """
    #else
        private static let testOptions: Set<String> = []
        private static let testUsage = ""
        private static let testSummary = ""
    #endif

    /// The largest `--max-connections`: more than one host's ports could carry from one address.
    static let maximumConnections = 65_536

    static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }

    private static func address(_ text: String, option: String) throws -> PeerAddress {
        guard let address = PeerAddress(text) else {
            throw UsageError.badValue(text, of: option, "needs HOST:PORT\(option == "http" ? " or off" : "")")
        }
        return address
    }
}
