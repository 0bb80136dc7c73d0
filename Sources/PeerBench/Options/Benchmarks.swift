/// A subcommand and what runs it.
struct Benchmark: Sendable {
    let subcommand: Subcommand
    let run: @Sendable (Arguments) async throws -> Void
}

/// Every benchmark `peerd-bench` runs, with its flags.
enum Benchmarks {
    static let all = [
        crashWriter, sync, shell, thin, lab, topology, relayFanout, sessions, importing, wifi, bootstrap, domains,
        identity, simulateScale, simulateSites,
    ]

    static let storage = Benchmark(
        subcommand: Subcommand(
            "",
            "EventLog's write, ingest and read rates and commit latency beside raw SQLite, per log size.\n"
                + "Other benchmarks (each has its own --help): "
                + all.map(\.subcommand.name).joined(separator: ", ") + ".",
            [
                .counts("--events", [200_000, 1_000_000], "log sizes to measure"),
                .toggle("--quick", "one size of 20000 events and 200 latency samples: seconds, not minutes"),
                .toggle("--ingest-only", "only the raw baselines and the ingest rows (to profile ingest)"),
                .directory("work directory"),
                .count("--latency-samples", 2_000, "single-event commits timed for the latency rows"),
            ])
    ) { arguments in
        let quick = arguments.has("--quick")
        var options = BenchmarkRun()
        options.eventCounts = arguments.has("--events") || !quick ? arguments.counts("--events") : [20_000]
        options.latencySamples =
            arguments.has("--latency-samples") || !quick ? arguments.count("--latency-samples") : 200
        options.ingestOnly = arguments.has("--ingest-only")
        options.directory = arguments.text("--dir")
        try options.run()
    }

    static let crashWriter = Benchmark(
        subcommand: Subcommand(
            "crash-writer", "The acknowledging writer of the crash integration test (prints `acked SEQ ID`).",
            [
                Flag.text("--data", "FILE", nil, "the database file").isRequired,
                Flag.count("--count", nil, "events to append").isRequired,
            ])
    ) { arguments in
        try CrashWriter(dataPath: arguments.text("--data") ?? "", count: arguments.count("--count")).run()
    }

    static let sync = Benchmark(
        subcommand: Subcommand(
            "sync",
            "Catch-up between two `peerd run` processes, live latency and idle traffic in a mesh, beside raw\n"
                + "loopback TCP and raw SQLite measured in the same run.",
            [
                .count("--events", 1_000_000, "events in the source replica of the catch-up"),
                .toggle("--quick", "100000 events, 500 latency samples: about a minute"),
                .directory("work directory"),
                .count("--latency-samples", 2_000, "single appends timed from A to B and C"),
                .count("--idle-rounds", 30, "anti-entropy rounds per connection in the idle measurement"),
                .count("--catch-ups", 3, "catch-ups, each after its own raw ingest baseline; the median is reported"),
                .toggle("--no-pruning", "live mesh without link pruning (the duplicates it saves)"),
            ])
    ) { arguments in
        let quick = arguments.has("--quick")
        var options = SyncBenchmark()
        options.events = arguments.has("--events") || !quick ? arguments.count("--events") : 100_000
        options.latencySamples =
            arguments.has("--latency-samples") || !quick ? arguments.count("--latency-samples") : 500
        options.idleRounds = arguments.count("--idle-rounds")
        options.catchUps = arguments.count("--catch-ups")
        options.directory = arguments.text("--dir")
        options.pruning = !arguments.has("--no-pruning")
        try options.run()
    }

    static let shell = Benchmark(
        subcommand: Subcommand(
            "shell",
            "Black-box benchmark of running `peerd run` processes: it only starts them, opens TCP connections,\n"
                + "speaks HTTP to their API and reads /proc/PID, so it runs unchanged against an old and a new binary.",
            [
                .peerd,
                Flag.text("--phases", "P,...", ShellPhase.allCases.map(\.rawValue).joined(separator: ","), "the phases")
                    .checked {
                        $0.split(separator: ",").first { ShellPhase(rawValue: String($0)) == nil }.map {
                            "unknown phase \($0)"
                        }
                    },
                .count("--events", 1_000_000, "events in the source replica of catchup-live"),
                .toggle("--quick", "catchup-live with 100000 events"),
                .directory(),
            ])
    ) { arguments in
        let phases = (arguments.text("--phases") ?? "").split(separator: ",").compactMap {
            ShellPhase(rawValue: String($0))
        }
        let events =
            arguments.has("--events") || !arguments.has("--quick") ? arguments.count("--events") : 100_000
        try ShellBenchmark(
            peerd: try arguments.peerd(), phases: ShellPhase.allCases.filter(phases.contains), events: events,
            directory: arguments.text("--dir")
        ).run()
    }

    static let thin = Benchmark(
        subcommand: Subcommand(
            "thin",
            "A thin client over HTTP: pushes N events in batches (POST /events), pulls them back in pages\n"
                + "(GET /events), beside raw SQLite inserting the same rows in the same batches; times windows of\n"
                + "pushes at growing numbers of stored events (--at) and prints the last window's rate over the first's.",
            [
                .count("--events", 50_000, "events pushed (at least enough to fill every window)"),
                .count("--batch", 500, "events per push and per page"),
                .counts("--at", [10_000, 200_000], "stored thin-client events at which a window of pushes is timed"),
                .count("--window", 10_000, "events pushed in each timed window"),
                .text(
                    "--store", "CONNINFO", nil,
                    "the daemon is a relay writing through this PostgreSQL store (an empty database; docs/relay.md)"),
                .peerd, .directory(),
            ])
    ) { arguments in
        try ThinBenchmark(
            events: arguments.count("--events"), batch: arguments.count("--batch"),
            windowStarts: arguments.counts("--at"), window: arguments.count("--window"), peerd: try arguments.peerd(),
            directory: arguments.text("--dir"), store: arguments.text("--store")
        ).run()
    }

    static let lab = Benchmark(
        subcommand: Subcommand(
            "lab",
            "Discovery and first sync across the hosts of scripts/netlab.sh (network namespaces, each with its own\n"
                + "D-Bus and avahi-daemon). Needs root. Exit 1 when a figure misses a check.",
            [
                .peerd,
                .text("--probe", "PATH", nil, "the mdns-probe binary (default: the mdns-probe next to peerd-bench)"),
                .count("--events", 500, "events the existing host holds when a new one arrives"),
                .count("--runs", 5, "arrivals with a warm and with a cold avahi cache, and mdns-probe rounds"),
                .directory("where the labs' work directories go, kept afterwards with every log"),
            ])
    ) { arguments in
        let peerd = try arguments.peerd()
        try await LabBenchmark(
            peerd: peerd,
            probe: try arguments.text("--probe").map(Executable.checked) ?? Executable.beside("mdns-probe"),
            events: arguments.count("--events"), runs: arguments.count("--runs"), directory: arguments.text("--dir")
        ).run()
    }

    static let topology = Benchmark(
        subcommand: Subcommand(
            "topology",
            "The same replicas as a full mesh and around one relay: connections, bytes per live event and idle,\n"
                + "and the fallback to the mesh after kill -9 of the relay; in the simulator, then with real daemons.",
            [
                Flag.counts("--sizes", [5, 20], "replica counts").checked {
                    $0.split(separator: ",").contains { (Flag.positive(String($0)) ?? 0) < 2 }
                        ? "--sizes needs 2 or more replicas" : nil
                },
                .count("--events", 5, "live events each replica writes"),
                .count("--seed", 1, "seed of the simulated runs"),
                .toggle("--simulated-only", "the simulator's table only"),
                .peerd, .directory(),
            ])
    ) { arguments in
        try TopologyBenchmark(
            sizes: arguments.counts("--sizes"), eventsPerReplica: arguments.count("--events"),
            seed: UInt64(arguments.count("--seed")), simulatedOnly: arguments.has("--simulated-only"),
            peerd: arguments.has("--simulated-only") ? nil : try arguments.peerd(), directory: arguments.text("--dir")
        ).run()
    }

    static let relayFanout = Benchmark(
        subcommand: Subcommand(
            "relay-fanout",
            "One real `peerd run --relay` and N replicas connected to it from this process (the real handshake\n"
                + "and sync session, one thread for all): the relay's memory per connection, and the latency of\n"
                + "live events written to the relay's HTTP API until each replica holds them (p99 target 100 ms).",
            [
                .count("--clients", 1_000, "replicas connected to the relay"),
                .counts("--rates", [1_000], "events written per second, one run per rate"),
                .decimal("--seconds", "S", 10, "how long each rate writes"),
                .count("--writers", 4, "threads writing to the HTTP API"),
                .peerd, .directory(),
            ])
    ) { arguments in
        try RelayFanoutBenchmark(
            clients: arguments.count("--clients"), rates: arguments.counts("--rates"),
            seconds: arguments.decimal("--seconds"), writers: arguments.count("--writers"),
            peerd: try arguments.peerd(), directory: arguments.text("--dir")
        ).run()
    }

    static let sessions = Benchmark(
        subcommand: Subcommand(
            "sessions",
            "Ingest of two writers' events with every item free and with every item claimed, beside raw SQLite;\n"
                + "then claims over HTTP, optimistic and granted through a relay, beside POST /items.",
            [
                .count("--events", 200_000, "events ingested"), .count("--entities", 1_000, "items they touch"),
                .count("--claims", 200, "claims timed of each kind"), .peerd, .directory(),
            ])
    ) { arguments in
        try SessionsBenchmark(
            events: arguments.count("--events"), entities: arguments.count("--entities"),
            claims: arguments.count("--claims"), peerd: try arguments.peerd(), directory: arguments.text("--dir")
        ).run()
    }

    static let importing = Benchmark(
        subcommand: Subcommand(
            "import",
            "`peerd import FILE` as a child process on both of its paths (own feeds, another replica's export),\n"
                + "beside EventLog.ingest of the same events in catch-up batches and raw SQLite.",
            [
                .count("--events", 1_000_000, "events in the NDJSON file"),
                Flag.text(
                    "--peerd", "PATH", nil,
                    "a peerd binary to time; more than once for several (default: the peerd next to peerd-bench)"
                ).repeating,
                .directory("work directory, kept afterwards with import.ndjson"),
            ])
    ) { arguments in
        let peerds = try arguments.texts("--peerd").map(Executable.checked)
        try ImportBenchmark(
            events: arguments.count("--events"), peerds: peerds.isEmpty ? [try Executable.beside("peerd")] : peerds,
            directory: arguments.text("--dir")
        ).run()
    }

    static let wifi = Benchmark(
        subcommand: Subcommand(
            "wifi",
            "Catch-up over a Wi-Fi-like link between two hosts of scripts/netlab.sh (tc tbf, random loss),\n"
                + "beside a raw TCP transfer over the same link. Needs root.",
            [
                .count("--events", 1_000_000, "events in A, with the workload of `peerd-bench sync`"),
                Flag.text("--rate", "RATE", "20mbit", "tbf rate of each host's link, in tc's units").checked {
                    LinkShape.megabitsPerSecond($0) == nil ? "--rate needs e.g. 20mbit or 5000kbit, not \($0)" : nil
                },
                Flag.decimal("--loss", "PERCENT", 0.5, "random packet loss each way, in percent").checked {
                    (0..<100).contains(Double($0) ?? -1) ? nil : "--loss needs a percentage in [0, 100), not \($0)"
                },
                .count("--probe-mb", 20, "megabytes of the raw TCP transfer that measures the link"),
                .peerd, .directory("where the lab's work directory goes, kept afterwards with every log"),
            ])
    ) { arguments in
        var options = WifiBenchmark()
        options.events = arguments.count("--events")
        options.rate = arguments.text("--rate") ?? "20mbit"
        options.lossPercent = arguments.decimal("--loss")
        options.probeMegabytes = arguments.count("--probe-mb")
        options.peerd = try arguments.peerd()
        options.directory = arguments.text("--dir")
        try await options.run()
    }

    static let bootstrap = Benchmark(
        subcommand: Subcommand(
            "bootstrap",
            "A fresh replica ready from a checkpoint, as users run it: `peerd run` of A (its history built in process,\n"
                + "a `peerd checkpoint make`) taking live writes, and a fresh B timed from its launch until it is\n"
                + "converged with A and its /items complete; beside raw SQLite and raw TCP. --link wifi needs root.",
            [
                .count("--events", 1_000_000, "events in A, with the workload of `peerd-bench sync`"),
                Flag.text("--link", "LINK", "loopback", "loopback, or wifi: two netlab hosts over the shaped link")
                    .checked {
                        BootstrapBenchmark.Link(rawValue: $0) == nil ? "--link needs loopback or wifi, not \($0)" : nil
                    },
                .toggle("--replay", "also a fresh B with `--start-from replay`, for comparison"),
                .count("--writes-per-second", 20, "the live writer's rate on A"),
                Flag.text("--rate", "RATE", "20mbit", "with --link wifi: tbf rate of each host's link").checked {
                    LinkShape.megabitsPerSecond($0) == nil ? "--rate needs e.g. 20mbit or 5000kbit, not \($0)" : nil
                },
                Flag.decimal("--loss", "PERCENT", 0.5, "with --link wifi: random packet loss each way").checked {
                    (0..<100).contains(Double($0) ?? -1) ? nil : "--loss needs a percentage in [0, 100), not \($0)"
                },
                .count("--probe-mb", 20, "with --link wifi: megabytes of the raw TCP transfer that measures the link"),
                .peerd, .directory(),
            ])
    ) { arguments in
        var options = BootstrapBenchmark()
        options.events = arguments.count("--events")
        options.link = BootstrapBenchmark.Link(rawValue: arguments.text("--link") ?? "loopback") ?? .loopback
        options.replay = arguments.has("--replay")
        options.writesPerSecond = arguments.count("--writes-per-second")
        options.rate = arguments.text("--rate") ?? "20mbit"
        options.lossPercent = arguments.decimal("--loss")
        options.probeMegabytes = arguments.count("--probe-mb")
        options.peerd = try arguments.peerd()
        options.directory = arguments.text("--dir")
        try await options.run()
    }

    static let domains = Benchmark(
        subcommand: Subcommand(
            "domains",
            "A declared domain against the Swift Item on the same history: ingest and refold in process, then\n"
                + "peerd import, check --refold, domain declare --accept-refold and a catch-up; beside raw SQLite.",
            [.count("--events", 200_000, "events of 20,000 items"), .peerd, .directory()])
    ) { arguments in
        try DomainsBenchmark(
            events: arguments.count("--events"), peerd: try arguments.peerd(), directory: arguments.text("--dir")
        ).run()
    }

    static let identity = Benchmark(
        subcommand: Subcommand(
            "identity",
            "Chain links, Ed25519 signing and verifying, admitting a hello, and the catch-up ingest of signed\n"
                + "events with verification on against off, beside a bare SQLite insert.",
            [
                .count("--events", 200_000, "rows of the bare insert (and up to 100000 signed events)"),
                .count("--signatures", 5_000, "signatures made and verified"), .directory(),
            ])
    ) { arguments in
        try IdentityBenchmark(
            events: arguments.count("--events"), signatures: arguments.count("--signatures"),
            directory: arguments.text("--dir")
        ).run()
    }

    static let simulateScale = Benchmark(
        subcommand: Subcommand(
            "simulate-scale",
            "Anti-entropy rounds to converge for simulated meshes of bounded fan-out; with --receptions, how\n"
                + "often each live event reaches each node of a full mesh with link pruning off and on.",
            [
                .counts("--sizes", [8, 16, 32, 64, 128, 256], "replica counts (with --receptions: 16,64,256)"),
                .count("--seed", 1, "seed of the simulated network; the same seed gives the same table"),
                .count("--fan-out", 3, "most peers each replica dials"),
                .toggle("--receptions", "instead: receptions per live event in a full mesh"),
                .count("--writers", nil, "with --receptions: only the first N replicas write (default: all)"),
                .count("--max-connections", nil, "with --receptions: connections per node (default: 64)"),
                .toggle("--pruning-only", "with --receptions: only the runs with pruning on"),
            ])
    ) { arguments in
        let receptions = arguments.has("--receptions")
        try SimulateScale(
            sizes: receptions && !arguments.has("--sizes") ? [16, 64, 256] : arguments.counts("--sizes"),
            seed: UInt64(arguments.count("--seed")), fanOut: arguments.count("--fan-out"), receptions: receptions,
            writers: arguments.has("--writers") ? arguments.count("--writers") : nil,
            maxConnections: arguments.has("--max-connections") ? arguments.count("--max-connections") : nil,
            pruningModes: arguments.has("--pruning-only") ? [true] : [false, true]
        ).run()
    }

    static let simulateSites = Benchmark(
        subcommand: Subcommand(
            "simulate-sites",
            "Simulated sites, each around its own relay (then a relay pair), linked over slow WAN links, under\n"
                + "writes, relay deaths and site partitions: time to converge after the last heal, bytes per event\n"
                + "per LAN and WAN link, receptions per event, and the run's wall-clock time and memory.",
            [
                .count("--sites", 10, "sites"),
                .count("--replicas", 100, "replicas per site (besides its relays)"),
                .counts("--relays", [1, 2], "relays per site, one run each"),
                .count("--events", 1_000, "write steps at random replicas"),
                .count("--relay-deaths", 3, "relays that crash and restart, each in another site"),
                .count("--partitions", 2, "sites cut off from the others, one after another"),
                .count("--seed", 1, "seed of the run; the same seed gives the same figures but for time and memory"),
            ])
    ) { arguments in
        try SimulateSites(
            sites: arguments.count("--sites"), replicasPerSite: arguments.count("--replicas"),
            relayCounts: arguments.counts("--relays"), events: arguments.count("--events"),
            relayDeaths: arguments.count("--relay-deaths"), partitions: arguments.count("--partitions"),
            seed: UInt64(arguments.count("--seed"))
        ).run()
    }
}
