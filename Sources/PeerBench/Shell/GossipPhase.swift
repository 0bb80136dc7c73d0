import Foundation

/// Phase `gossip`: strangers on A's gossip port.
struct GossipPhase {
    let cluster: LoopbackCluster

    /// Runs the phase; returns its Markdown section.
    func run() throws -> [String] {
        let a = try cluster.start("A", data: try cluster.initialize("A"))
        let b = try cluster.start("B", data: try cluster.initialize("B", joining: a.data), peers: [a])
        let feed = try ChangeFeed(b.api, name: "B")
        defer { feed.close() }
        let probe = LiveProbe(writer: a.api, receiver: feed, label: "gossip")
        try probe.waitForFirstDelivery()

        progress("gossip: baseline: 100 live writes A→B, one every 20 ms ...")
        let baselineStats = a.daemon.sample()
        let baselineDescriptors = a.openDescriptors
        let baseline = probe.run(count: 100, intervalMs: 20)
        let baselineThreads = baselineStats.threads ?? 0
        let descriptorLimit = ChildStats.openFilesLimit(pid: a.daemon.pid)
        var results: [AttackResult] = []
        var stopped: String?
        for attack in GossipAttack.all {
            if let how = a.exitDescription ?? b.exitDescription {
                stopped = "- **\(attack.name) and later attacks not run**: a daemon \(how)"
                break
            }
            results.append(measure(attack, on: a, probe: probe, baselineThreads: baselineThreads))
        }

        var lines = [
            "### gossip: strangers on A's gossip port",
            "",
            "A and B (`--peer` A) on loopback; live = `POST /items` on A timed until the event is in B's `GET /changes`"
                + " stream. A's open-files limit: \(Figure.count(descriptorLimit)). "
                + "Attack figures are taken while its connections are held; peaks sampled every 250 ms.",
            "",
        ]
        var table = MarkdownTable(
            ["Measure"] + ["baseline"] + results.map { "\($0.attack.name) ×\($0.attack.connections)" })
        func row(_ label: String, _ base: String, _ value: (AttackResult) -> String) {
            table.row([label, base] + results.map(value))
        }
        row("Connections made to A's gossip port (TCP connect done)", "—") { Figure.count($0.connections.connected) }
        row("Connects refused / timed out (2 s)", "—") {
            "\($0.connections.connectFailures) / \($0.connections.connectTimeouts)"
        }
        row("What each connection sends", "—") { GossipPhase.describe($0.attack) }
        row("Held for (s, after the last connect)", "—") { Figure.seconds($0.heldSeconds) }
        row("Bytes the benchmark sent to A (all connections)", "—") { Figure.bytes($0.connections.bytesSent) }
        row("A threads (baseline: before; attack: peak)", Figure.count(baselineStats.threads)) {
            Figure.count($0.peak.threads)
        }
        row("A VmRSS, MiB (baseline: before; attack: peak sampled)", Figure.mib(baselineStats.residentMiB)) {
            Figure.mib($0.peak.residentMiB)
        }
        row("A VmHWM, MiB (peak since A started, at the end)", Figure.mib(baselineStats.peakMiB)) {
            Figure.mib($0.peak.highWaterMiB)
        }
        row("A open descriptors (baseline: before; attack: peak)", Figure.count(baselineDescriptors)) {
            Figure.count($0.peak.descriptors)
        }
        row("Connections A closed by itself while held", "—") { "\($0.connections.closedByDaemon.count)" }
        row("… of them by reset", "—") { "\($0.connections.resets)" }
        row("Time from connect to A's close", "—") {
            Figure.distribution($0.connections.closeTimes, never: "never within \(Int($0.heldSeconds)) s")
        }
        row("Live A→B: delivered of tried", Figure.delivered(baseline)) { Figure.delivered($0.live) }
        row("Live A→B: one write every (ms)", "20") { "\($0.attack.sampleIntervalMs)" }
        row("Live A→B latency p50 / p99 / max (ms)", Figure.latency(baseline.summary)) {
            Figure.latency($0.live.summary)
        }
        row("Live A→B failures", Figure.failures(baseline)) { Figure.failures($0.live) }
        row("Log lines A wrote while held", "—") { Figure.count($0.logLinesHeld.count) }
        row("… of them `connection refused`", "—") { Figure.count(GossipPhase.refused($0.logLinesHeld)) }
        row("Log lines A wrote until its threads settled after the close", "—") { Figure.count($0.logLinesAll.count) }
        row("… of them `connection refused`", "—") { Figure.count(GossipPhase.refused($0.logLinesAll)) }
        row("A new write reaches B after the close (latency, ms)", "—") {
            $0.afterwards.latencies.first.map { Figure.ms($0.seconds) } ?? "**no**: \(Figure.failures($0.afterwards))"
        }
        row("A still running after the attack", "yes") { $0.exitAfter.map { "**no**: \($0)" } ?? "yes" }
        row("A threads back to ≤ baseline + 2 after the close (s)", "—") {
            Figure.seconds(
                $0.settleSeconds, otherwise: "**not within 30 s** (\(Figure.count($0.threadsAfter)) threads)")
        }
        lines += table.lines
        let notes = ([("baseline", baseline)] + results.map { ($0.attack.name, $0.live) })
            .compactMap { name, samples in samples.firstFailure.map { "- first live failure (\(name)): \($0)" } }
        let unsettled = results.compactMap { result in
            result.threadNamesAfter.map { "- A's threads 30 s after the \(result.attack.name) close: \($0)" }
        }
        let more = notes + unsettled + (stopped.map { [$0] } ?? [])
        if !more.isEmpty { lines += [""] + more }
        return lines
    }

    static func refused(_ lines: [Substring]) -> Int {
        lines.records(.connectionRefused).count
    }

    static func describe(_ attack: GossipAttack) -> String {
        let script = attack.script
        if !script.drip.isEmpty {
            return "\(script.drip.count) bytes of handshake init, 1 byte every \(Int(script.dripIntervalSeconds)) s"
        }
        if script.floodBytes > 0 {
            return "4 MiB frame header, then random bytes for \(Int(script.floodSeconds)) s"
        }
        return "nothing"
    }
}
