import Foundation
import NetworkLab
import Replica
import SyncProtocol

/// `peerd-bench bootstrap`: a fresh device ready from a checkpoint, as users
/// run it. A holds the history of `peerd-bench sync` (built in process) and a
/// checkpoint made by `peerd checkpoint make`; it runs as `peerd run` and
/// takes live item writes over HTTP the whole time; a fresh B (`peerd init
/// --join`, `peerd run --peer A`) is timed from its launch until it is ready
/// (``FreshStart``): it shows A's state hash at the same moment, misses no
/// event, its `/items` lists as many items as A's, and (`peerd wait
/// --converged-with 1`) its `peers_in_sync` is at least 1. Then a second
/// fresh B while A takes no writes, and with `--replay` a third that replays
/// the whole history. On loopback or over the shaped link of `peerd-bench
/// wifi`, beside the same run's baselines.
struct BootstrapBenchmark {
    /// Where A and B run.
    enum Link: String, CaseIterable {
        case loopback, wifi
    }

    /// Events in A, with the workload of `peerd-bench sync`.
    var events = 1_000_000
    var link = Link.loopback
    /// Also a fresh B with `--start-from replay`.
    var replay = false
    /// The live writer's rate on A.
    var writesPerSecond = 20
    /// The link of `--link wifi`, as `peerd-bench wifi` shapes it.
    var rate = "20mbit"
    var lossPercent = 0.5
    var probeMegabytes = 20
    var peerd = ""
    /// Where the work directory goes (kept); nil: a temporary one, removed at the end.
    var directory: String?

    /// The targets: 1M events over 20,000 items ready within these many seconds.
    static let targetEvents = 1_000_000
    static let loopbackTargetSeconds = 1.5
    static let wifiTargetSeconds = 4.0

    /// What the run measured before the fresh starts.
    struct Setup {
        var rawInsert: PhaseResult?
        var loopback: LoopbackThroughput?
        var pingPong: LatencySummary?
        var probeBytes = 0
        var probeSeconds = 0.0
        var payloadBytes = 0
        var feeds = 0
        var buildSeconds = 0.0
        /// `peerd checkpoint make --data A`, run before A's daemon starts.
        var makeSeconds = 0.0
        var makePeakMiB = Double.nan
        var coveredEvents = 0
        var entities = 0
        var checkpoint = ""
        var sourceItems = 0

        var probeMegabitsPerSecond: Double { probeSeconds > 0 ? Double(probeBytes) * 8 / 1e6 / probeSeconds : 0 }
    }

    func run() async throws {
        if link == .wifi {
            if let reason = NetLab.unavailableReason(executables: [peerd, Executable.own]) {
                throw LabFailure("bootstrap --link wifi: \(reason)")
            }
            for tool in ["/usr/sbin/tc", "/usr/sbin/nft"] where !FileManager.default.isExecutableFile(atPath: tool) {
                throw LabFailure("bootstrap --link wifi: needs \(tool) (packages iproute2, nftables)")
            }
        }
        let workspace = try Workspace(directory: directory)
        defer { workspace.finish() }
        progress("peerd-bench bootstrap: work directory \(workspace.path), peerd at \(peerd)")
        var heading = [
            "## peerd-bench bootstrap: `\(peerd)` (\(ShellBenchmark.identity(of: peerd))), run \(Markdown.now)",
            "",
            Markdown.command,
            "- machine: \(Report.machine); load average (1 min) \(ShellBenchmark.loadAverage) at the start",
        ]
        switch link {
        case .loopback:
            heading.append("- link: loopback, every daemon on 127.0.0.1 (`--no-mdns --log-level info`)")
        case .wifi:
            heading.append(
                "- link: two hosts of scripts/netlab.sh (network namespaces on one bridge), A on host 1, B on host 2; "
                    + "each host's eth0 `tc tbf rate \(rate) burst 32kbit latency 50ms` (both directions), host 1 "
                    + "drops \(lossPercent) % of the packets it sends and of those it receives at random (nftables; "
                    + "its `lo` exempt: an accept rule ahead of the drop, so that only the link loses packets); daemons as "
                    + "`peerd-bench wifi` starts them (`--log-level debug --no-mdns`); the bench reads each API, "
                    + "and writes to A's, on its host's 127.0.0.1 by entering the host's network namespace, off the link"
            )
        }
        Markdown.emit(heading)

        var setup = Setup()
        let sizeBenchmark = SizeBenchmark(size: events, batchSize: 1_000, maxItems: 20_000, workspace: workspace)
        progress("baseline: raw SQLite insert of \(Report.grouped(Double(events))) rows ...")
        setup.rawInsert = try sizeBenchmark.rawInsertRate(.primaryKeyOnly)
        let key = ClusterKey.generate()
        var results: [FreshStart.Result] = []
        switch link {
        case .loopback:
            progress("baseline: raw loopback TCP, 1 GiB in 128 KiB writes ...")
            setup.loopback = try LoopbackBaseline.throughput()
            setup.pingPong = try LoopbackBaseline.pingPong(samples: 2_000)
            let source = workspace.file("A")
            workspace.discard(source)
            try prepareSource(in: source, key: key, workspace: workspace, into: &setup)
            let site = LoopbackSite(peerd: peerd, workspace: workspace)
            defer { site.stopAll() }
            results = try await freshStarts(site: site, source: source, key: key, setup: &setup)
        case .wifi:
            results = try await NetLab.with(
                hosts: 2, prefix: "bb", network: "10.84", peerd: peerd, directory: directory
            ) { lab in
                let source = lab.directory.appendingPathComponent("A").path
                try prepareSource(in: source, key: key, workspace: workspace, into: &setup)
                progress("bootstrap: shaping the link to \(rate), \(lossPercent) % loss each way")
                for host in 1...2 { try await lab.limitRate(of: host, to: rate) }
                try await lab.dropAtRandom(on: 1, perHundredThousand: Int((lossPercent * 1_000).rounded()))
                try await Self.exemptLoopback(of: 1, in: lab)
                var probe = WifiBenchmark.Results()
                var wifi = WifiBenchmark()
                wifi.probeMegabytes = probeMegabytes
                try await wifi.probeLink(lab, bench: Executable.own, into: &probe)
                (setup.probeBytes, setup.probeSeconds) = (probe.probeBytes, probe.probeSeconds)
                return try await freshStarts(site: LabSite(lab: lab), source: source, key: key, setup: &setup)
            }
        }
        Markdown.emit(
            BootstrapReport(benchmark: self, setup: setup, results: results, loadAtEnd: ShellBenchmark.loadAverage)
                .lines)
        if let failed = results.first(where: { $0.mode == .checkpoint && !$0.startedFromCheckpoint }) {
            throw BenchmarkFailure(
                description:
                    "B did not start from the checkpoint (history_held \(failed.historyHeld.map(String.init) ?? "absent"), "
                    + "no checkpoint.started record)")
        }
    }

    /// `NetLab.dropAtRandom`'s rules drop on every interface of the host, its `lo` too: the bench's own
    /// requests to A's API on host 1's 127.0.0.1 (the live writes, the `/status` reads) would lose a SYN
    /// now and then and wait a second for its retransmission. An accept rule for `lo` ahead of each drop
    /// keeps the loss on the link (`eth0`), where `peerd-bench wifi` has it.
    private static func exemptLoopback(of host: Int, in lab: NetLab) async throws {
        for (chain, match) in [("input", "iifname"), ("output", "oifname")] {
            let result = try await lab.exec(
                host, ["nft", "insert", "rule", "inet", "netlab_loss", chain, match, "lo", "accept"])
            guard result.status == 0 else { throw LabFailure("host \(host): nft insert rule … \(chain): \(result)") }
        }
    }

    /// A's data directory: the history built in process (not timed as sync), then
    /// `peerd checkpoint make --data A` as a child, timed, before A's daemon starts.
    private func prepareSource(in directory: String, key: ClusterKey, workspace: Workspace, into setup: inout Setup)
        throws
    {
        let built = try SyncCatchUpBenchmark.buildSource(in: directory, key: key, events: events, label: "bootstrap")
        (setup.payloadBytes, setup.buildSeconds, setup.feeds) = built
        progress("bootstrap: peerd checkpoint make --data A ...")
        let made = try LoggedChild.timed(
            name: "peerd checkpoint make", peerd, ["checkpoint", "make", "--data", directory, "--json"],
            logPath: workspace.file("checkpoint-make.log"))
        setup.makeSeconds = made.seconds
        setup.makePeakMiB = made.last.peakMiB
        guard let report = try JSONSerialization.jsonObject(with: Data(made.stdout.utf8)) as? [String: Any],
            let id = report["id"] as? String
        else { throw BenchmarkFailure(description: "peerd checkpoint make printed no JSON report: \(made.stdout)") }
        setup.checkpoint = id
        setup.coveredEvents = report["covers_events"] as? Int ?? 0
        setup.entities = report["entities"] as? Int ?? 0
        progress(
            String(
                format: "bootstrap: checkpoint %@… covers %@ events, %@ entities, made in %.2f s",
                String(id.prefix(16)),
                Report.grouped(Double(setup.coveredEvents)), Report.grouped(Double(setup.entities)), made.seconds))
    }

    /// A's `peerd run`, then the fresh Bs one after the other, A writing live the whole time of each.
    private func freshStarts(site: any BootstrapSite, source data: String, key: ClusterKey, setup: inout Setup)
        async throws -> [FreshStart.Result]
    {
        let source = try await site.startSource(data: data)
        let itemIDs = try source.api.itemIDs()
        setup.sourceItems = itemIDs.count
        var runs: [(FreshStart.Mode, String, Int)] = [(.checkpoint, "B", writesPerSecond), (.checkpoint, "B-quiet", 0)]
        if replay { runs.append((.replay, "B-replay", writesPerSecond)) }
        var results: [FreshStart.Result] = []
        for (mode, name, rate) in runs {
            let deadline = mode == .checkpoint ? 120 : max(300.0, Double(events) / 1_000)
            let start = FreshStart(
                mode: mode, name: name, site: site, source: source, code: key.code, itemIDs: itemIDs,
                writesPerSecond: rate, deadlineSeconds: deadline)
            results.append(try await start.run())
        }
        try await site.stop(source)
        return results
    }
}

extension FreshStart.Result {
    /// B's log said `checkpoint.started` and its `/status` holds none of the covered history.
    var startedFromCheckpoint: Bool { started != nil && historyHeld == false }
}
