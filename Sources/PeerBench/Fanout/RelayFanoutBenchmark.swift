import ChildProcesses
import Foundation
import SyncProtocol

#if canImport(Glibc)
    import Glibc
#endif

/// `peerd-bench relay-fanout`: one real `peerd run --relay` holds `clients`
/// connected replicas, each a `FanoutClient` of this process (the real
/// handshake and sync session over TCP, all on one thread). Writes go to
/// the relay's HTTP API at each rate of `rates`; every client's arrival of
/// every event is a latency sample. Prints the relay's resident memory
/// before and after the clients connected, and the raw loopback TCP round
/// trip of the same run as the baseline.
struct RelayFanoutBenchmark {
    let clients: Int
    let rates: [Int]
    let seconds: Double
    let writers: Int
    let peerd: String
    let directory: String?

    /// The fan-out latency the relay is held to (docs/performance.md).
    static let targetP99Seconds = 0.100

    func run() throws {
        let limits = try raiseDescriptorLimit(needed: 2 * clients + 256)
        let baseline = try LoopbackBaseline.pingPong(samples: 2_000)
        let baselineRate = rates.first ?? 1_000
        progress("relay-fanout: raw TCP fan-out to \(clients) sockets at \(baselineRate) messages/s")
        let rawFanout = try FanoutBaseline(
            clients: clients, rate: baselineRate, rounds: min(Int(Double(baselineRate) * seconds), 2_000)
        ).run()
        let workspace = try Workspace(directory: directory)
        defer { workspace.finish() }
        progress("peerd-bench relay-fanout: work directory \(workspace.path), peerd at \(peerd)")
        let cluster = try LoopbackCluster(phase: "relay-fanout", peerd: peerd, workspace: workspace)
        defer { cluster.stopAll() }
        let data = try cluster.initialize("relay")
        let code = try LoggedChild.run(peerd, ["cluster-code", "--data", data])
        let key = try ClusterKey(code: code.trimmingCharacters(in: .whitespacesAndNewlines))
        let relay = try cluster.start("relay", data: data, extra: ["--relay"])
        let cap = try relay.api.json("/status")["sync"].flatMap { ($0 as? [String: Any])?["max_connections"] as? Int }
        Thread.sleep(forTimeInterval: 1)  // a settled daemon to sample, not a wait for something
        let before = relay.daemon.sample()

        let swarm = try FanoutSwarm(port: relay.gossipPort, clusterKey: key)
        defer { swarm.stop() }
        let connectStart = ContinuousClock.now
        swarm.connect(clients)
        try waitUntil("\(clients) clients sync with the relay", seconds: 300, pollMs: 100) {
            let (syncing, lost, reason) = swarm.read { ($0.syncing, $0.lost, $0.lastRefusal) }
            if lost > 0 { throw BenchmarkFailure(description: "a client lost its connection: \(reason)") }
            return syncing == clients
        }
        let connectSeconds = (ContinuousClock.now - connectStart).seconds
        let connected = try relay.api.peersConnected()
        Thread.sleep(forTimeInterval: 2)  // the idle rounds of every session, then sample
        let after = relay.daemon.sample()
        let refusedWhileConnecting = swarm.read(\.refused)
        progress("relay-fanout: \(clients) clients connected in \(String(format: "%.1f", connectSeconds)) s")

        var rows: [RateFigures] = []
        for rate in rates {
            progress("relay-fanout: \(rate) events/s for \(seconds) s")
            swarm.resetDeliveries()
            let cpuBefore = relay.daemon.sample().cpuSeconds
            let rateStart = ContinuousClock.now
            let written = FanoutWriter(api: relay.api, rate: rate, seconds: seconds, threads: writers).run()
            let writeSeconds = (ContinuousClock.now - rateStart).seconds
            // Every client holds every event, or 10 s passed since the last write.
            _ = try? waitUntil("every client holds every event", seconds: 10, pollMs: 50) {
                swarm.read { $0.deliveries.allHeld(by: clients).count } >= written.written
            }
            let cpu = relay.daemon.sample().cpuSeconds - cpuBefore
            let elapsed = (ContinuousClock.now - rateStart).seconds
            let deliveries = swarm.snapshot.deliveries
            let batches = swarm.read(\.batches)
            rows.append(
                RateFigures(
                    rate: rate, written: written, deliveries: deliveries, batches: batches,
                    allHeld: LatencySummary(deliveries.allHeld(by: clients)),
                    incomplete: written.written - deliveries.allHeld(by: clients).count,
                    achievedRate: Double(written.written) / writeSeconds, relayCPUPerSecond: cpu / elapsed))
        }
        let lost = swarm.read(\.lost)
        report(
            limits: limits, baseline: baseline, rawFanout: (baselineRate, rawFanout), cap: cap, connected: connected,
            connectSeconds: connectSeconds,
            refused: refusedWhileConnecting, lost: lost, before: before, after: after, rows: rows)
    }

    /// One rate's figures.
    struct RateFigures {
        var rate: Int
        var written: FanoutWriter.Outcome
        var deliveries: FanoutDeliveries
        /// Batches the clients received: deliveries / batches is the events each push carried.
        var batches: Int
        var allHeld: LatencySummary
        var incomplete: Int
        /// Writes per second the writers reached (below the rate when the relay's answers lag).
        var achievedRate: Double
        /// The relay's CPU seconds per second from the first write until every client held every event.
        var relayCPUPerSecond: Double
    }

    /// Raises this process's soft limit of open files for `needed`; returns (before, after).
    private func raiseDescriptorLimit(needed: Int) throws -> (before: UInt64, after: UInt64) {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else {
            throw BenchmarkFailure(description: "cannot read the open-files limit: \(ProbeError.text(errno))")
        }
        let before = UInt64(limit.rlim_cur)
        if limit.rlim_cur < rlim_t(needed) {
            limit.rlim_cur = min(limit.rlim_max, rlim_t(needed))
            _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
            _ = getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        }
        guard limit.rlim_cur >= rlim_t(needed) else {
            throw BenchmarkFailure(
                description: "the open-files limit is \(limit.rlim_cur) (hard \(limit.rlim_max)); \(clients) clients "
                    + "need \(needed): raise `ulimit -Hn`, or give fewer --clients")
        }
        return (before, UInt64(limit.rlim_cur))
    }

    private func report(
        limits: (before: UInt64, after: UInt64), baseline: LatencySummary, rawFanout: (rate: Int, FanoutDeliveries),
        cap: Int?, connected: Int,
        connectSeconds: Double, refused: Int, lost: Int, before: ChildStats, after: ChildStats, rows: [RateFigures]
    ) {
        let ms = { (seconds: Double) in String(format: "%.1f", seconds * 1_000) }
        let perConnectionKiB = (after.residentMiB - before.residentMiB) * 1_024 / Double(clients)
        print("## One relay, \(clients) replicas")
        print("")
        print(
            "- one `peerd run --relay` (release, `--max-connections` default: \(cap.map(String.init) ?? "?")) on "
                + "127.0.0.1; \(clients) clients in `peerd-bench` on one event loop thread, each with the encrypted "
                + "handshake and a `SyncSession` over its own TCP connection; load average \(ShellBenchmark.loadAverage)"
        )
        print(
            "- bench open-files limit raised from \(limits.before) to \(limits.after); the relay raises its own "
                + "(docs/cli.md `--max-connections`)")
        print(
            "- connected: \(connected) in the relay's `GET /status`, after \(String(format: "%.1f", connectSeconds)) s "
                + "(\(FanoutSwarm.handshakesAtOnce) handshakes at once; \(refused) connects refused and retried); "
                + "\(lost) connections lost during the run")
        print(
            "- relay RSS (`/proc/<pid>/status` VmRSS): \(String(format: "%.1f", before.residentMiB)) MiB before, "
                + "\(String(format: "%.1f", after.residentMiB)) MiB with \(clients) connected: "
                + "**\(String(format: "%.1f", perConnectionKiB)) KiB per connection**; threads "
                + "\(before.threads.map(String.init) ?? "?") → \(after.threads.map(String.init) ?? "?")")
        print(
            "- baseline, same run: raw loopback TCP round trip of 200 bytes (`LoopbackBaseline.pingPong`, "
                + "2,000 samples): p50 \(ms(baseline.p50)) ms, p99 \(ms(baseline.p99)) ms, max \(ms(baseline.max)) ms")
        print(
            "- baseline, same run: raw TCP fan-out (`FanoutBaseline`): one thread writes a 100-byte message to "
                + "each of \(clients) loopback sockets, \(rawFanout.rate) rounds a second, one event loop thread reads "
                + "them all; no framing, encryption or storage")
        print(
            "- writes: `POST /items` to the relay's HTTP API from \(writers) threads on a fixed schedule for "
                + "\(seconds) s; latency from just before the request to a client's arrival of the event (one "
                + "sample per client per event); all held: until the last client had it")
        print("")
        print(
            "| events/s (reached) | written | deliveries | events per batch | p50 (ms) | p99 (ms) | max (ms) | all held p50 / p99 / max (ms) "
                + "| not held by all | relay CPU (cores) | POST p50 / p99 (ms) | p99 ≤ 100 ms |")
        print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
        let raw = rawFanout.1
        let rawAllHeld = LatencySummary(raw.allHeld(by: clients))
        print(
            "| \(rawFanout.rate), raw TCP (baseline) | \(raw.events.count) | \(raw.count) | 1 | \(ms(raw.percentile(0.50))) "
                + "| \(ms(raw.percentile(0.99))) | \(ms(raw.maxSeconds)) "
                + "| \(ms(rawAllHeld.p50)) / \(ms(rawAllHeld.p99)) / \(ms(rawAllHeld.max)) | 0 | | | |")
        for row in rows {
            let requests = LatencySummary(row.written.requests)
            let p99 = row.deliveries.percentile(0.99)
            print(
                "| \(row.rate) (\(Int(row.achievedRate.rounded()))) "
                    + "| \(row.written.written)\(row.written.failed > 0 ? " (\(row.written.failed) failed)" : "") "
                    + "| \(row.deliveries.count) "
                    + "| \(String(format: "%.1f", Double(row.deliveries.count) / Double(max(1, row.batches)))) "
                    + "| \(ms(row.deliveries.percentile(0.50))) | \(ms(p99)) "
                    + "| \(ms(row.deliveries.maxSeconds)) "
                    + "| \(row.allHeld.count == 0 ? "—" : "\(ms(row.allHeld.p50)) / \(ms(row.allHeld.p99)) / \(ms(row.allHeld.max))") "
                    + "| \(row.incomplete) | \(String(format: "%.2f", row.relayCPUPerSecond)) "
                    + "| \(ms(requests.p50)) / \(ms(requests.p99)) | \(p99 <= Self.targetP99Seconds ? "met" : "not met") |"
            )
            if row.written.failed > 0 { progress("relay-fanout: a write failed: \(row.written.lastFailure)") }
        }
        print("")
    }
}
