import Foundation
import NetworkLab
import Replica
import SyncProtocol

#if canImport(Glibc)
    import Glibc
#endif

/// `peerd-bench wifi`: catch-up of a fresh replica over a Wi-Fi-like link, printed as Markdown beside the
/// link's own throughput measured in the same run.
struct WifiBenchmark {
    /// Events in the source replica A that a fresh B catches up from.
    var events = 1_000_000
    /// The `tc tbf` rate of each host's link, as `tc` reads it (`20mbit`, `5000kbit`).
    var rate = "20mbit"
    /// Percent of the packets dropped at random, each way.
    var lossPercent = 0.5
    /// Megabytes (10^6) of the raw TCP transfer that measures the link itself.
    var probeMegabytes = 20
    /// The `peerd` binary under test.
    var peerd = ""
    /// Where the lab's work directory goes (kept); nil means a temporary directory, removed at the end.
    var directory: String?

    /// The 1M-event target of issue 16: a fresh replica catches up within this many seconds on the link.
    static let targetSeconds = 20.0
    static let targetEvents = 1_000_000
    /// The port of the link probe's receiver in host 2.
    private static let probePort = "5201"

    /// Everything one run measured.
    struct Results {
        var buildSeconds = 0.0
        var payloadBytes = 0
        var probeBytes = 0
        var probeSeconds = 0.0
        var seconds = 0.0
        var firstEventSeconds: Double?
        var receivedBytes: Double?
        var sentBytes: Double?
        var sourcePeakMiB = Double.nan
        var receiverPeakMiB = Double.nan

        var probeMegabitsPerSecond: Double { probeSeconds > 0 ? Double(probeBytes) * 8 / 1e6 / probeSeconds : 0 }
    }

    func run() async throws {
        let bench = Executable.own
        if let reason = NetLab.unavailableReason(executables: [peerd, bench]) {
            throw LabFailure("wifi: \(reason)")
        }
        for tool in ["/usr/sbin/tc", "/usr/sbin/nft"]
        where !FileManager.default.isExecutableFile(atPath: tool) {
            throw LabFailure("wifi: needs \(tool) (packages iproute2, nftables)")
        }
        Markdown.emit([
            "## peerd-bench wifi: `\(peerd)` (\(ShellBenchmark.identity(of: peerd))), run \(Markdown.now)",
            "",
            Markdown.command,
            "- machine: \(Report.machine); load average (1 min) \(ShellBenchmark.loadAverage)",
            "- link: two hosts of scripts/netlab.sh (network namespaces on one bridge); each host's eth0 "
                + "`tc tbf rate \(rate) burst 32kbit latency 50ms` (both directions), host 1 drops "
                + "\(lossPercent) % of the packets it sends and of those it receives at random (nftables)",
        ])
        var results = Results()
        try await NetLab.with(hosts: 2, prefix: "bw", network: "10.82", peerd: peerd, directory: directory) {
            lab in
            let key = ClusterKey.generate()
            let source = try buildSource(in: lab.directory.appendingPathComponent("A"), key: key, into: &results)
            progress("wifi: shaping the link to \(rate), \(lossPercent) % loss each way")
            for host in 1...2 { try await lab.limitRate(of: host, to: rate) }
            try await lab.dropAtRandom(on: 1, perHundredThousand: Int((lossPercent * 1_000).rounded()))
            try await probeLink(lab, bench: bench, into: &results)
            try await catchUp(lab, source: source, key: key, into: &results)
        }
        Markdown.emit(report(results))
    }

    /// A's data directory: the cluster key and a log of `events` events of 4 origin feeds, ingested in
    /// process as `peerd-bench sync` builds its source (not timed as sync).
    private func buildSource(in directory: URL, key: ClusterKey, into results: inout Results) throws -> LabNode {
        let filled = try SyncCatchUpBenchmark.buildSource(
            in: directory.path, key: key, events: events, label: "wifi")
        results.payloadBytes = filled.payloadBytes
        results.buildSeconds = filled.seconds
        return LabNode(name: "A", host: 1, data: directory, replicaID: "bench-source")
    }

    /// The raw TCP transfer from host 1 to host 2 through the shaped link.
    func probeLink(_ lab: NetLab, bench: String, into results: inout Results) async throws {
        let bytes = probeMegabytes * 1_000_000
        progress("wifi: raw TCP, \(probeMegabytes) MB from host 1 to host 2 ...")
        let receiver = try await lab.spawn(
            "link-probe receive", on: 2, [bench, "link-probe", "receive", Self.probePort])
        try await lab.wait("the link probe listening") {
            receiver.stdout.lines.contains { $0.hasPrefix("link-probe: listening") }
        }
        let sent = try await lab.exec(
            1, [bench, "link-probe", "send", lab.address(of: 2), Self.probePort, "\(bytes)"])
        guard sent.status == 0 else { throw LabFailure("link-probe send: \(sent)") }
        var measured: (bytes: Int, seconds: Double)?
        try await lab.wait("the link probe's figure") {
            measured = receiver.stdout.lines.first { $0.hasPrefix(LinkProbe.prefix) }.flatMap(LinkProbe.parse)
            return measured != nil
        }
        guard let measured, measured.bytes == bytes else {
            throw LabFailure("link probe received \(measured?.bytes ?? 0) of \(bytes) bytes")
        }
        (results.probeBytes, results.probeSeconds) = measured
        progress(String(format: "wifi: link: %.2f Mbit/s", results.probeMegabitsPerSecond))
    }

    /// `peerd run` of A on host 1 and of a fresh B on host 2 dialing it; timed from B's launch until B
    /// holds every event, then both daemons' byte counters and peak memory.
    private func catchUp(_ lab: NetLab, source: LabNode, key: ClusterKey, into results: inout Results) async throws {
        let (receiver, _) = try await lab.initNode("B", on: 2, joining: key.code)
        let a = try await lab.start(source, extra: ["--no-mdns"])
        let counter = try ReadOnlyEventCounter(path: receiver.data.appendingPathComponent("replica.db").path)
        progress("wifi: B joins A and fetches \(Report.grouped(Double(events))) events ...")
        let b = try await lab.start(receiver, peers: ["\(lab.address(of: 1)):4100"], extra: ["--no-mdns"])
        var lastReport = Date()
        let timeout = max(300.0, Double(events) / 1_000)
        try await lab.wait(
            "B holding \(events) events", timeout: .seconds(timeout), every: .milliseconds(50)
        ) {
            guard a.isRunning, b.isRunning else { throw LabFailure("a daemon ended during the catch-up") }
            let held = try counter.count()
            let elapsed = Date().timeIntervalSince(b.startedAt)
            if held > 0 && results.firstEventSeconds == nil { results.firstEventSeconds = elapsed }
            if Date().timeIntervalSince(lastReport) > 10 {
                lastReport = Date()
                progress(String(format: "wifi: %.0f s, B holds %@ events", elapsed, Report.grouped(Double(held))))
            }
            return held >= events
        }
        results.seconds = Date().timeIntervalSince(b.startedAt)
        results.receivedBytes = try await Self.metric(
            "peersync_bytes_received_total", of: lab, host: 2, bench: Executable.own)
        results.sentBytes = try await Self.metric("peersync_bytes_sent_total", of: lab, host: 1, bench: Executable.own)
        results.sourcePeakMiB = ChildStats(pid: a.pid).peakMiB
        results.receiverPeakMiB = ChildStats(pid: b.pid).peakMiB
        progress(
            String(
                format: "wifi: %@ events in %.1f s = %@ events/s", Report.grouped(Double(events)),
                results.seconds, Report.grouped(Double(events) / results.seconds)))
        try await lab.stop(b)
        try await lab.stop(a)
    }

    /// The value of counter `name` on the `/metrics` of the daemon in host `host` (its API on
    /// 127.0.0.1:4000), read by `peerd-bench link-probe metric` inside the host.
    private static func metric(_ name: String, of lab: NetLab, host: Int, bench: String) async throws -> Double? {
        let result = try await lab.exec(host, [bench, "link-probe", "metric", "4000", name])
        return result.status == 0 ? Double(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) : nil
    }

    private func report(_ results: Results) -> [String] {
        let count = Double(events)
        let eventRate = results.seconds > 0 ? count / results.seconds : 0
        let link = results.probeMegabitsPerSecond
        var table = MarkdownTable(["what", "figure"], leftAligned: 2)
        table.row(
            "link, raw TCP \(probeMegabytes) MB host 1 → host 2 (first byte to end)",
            String(format: "**%.2f Mbit/s** (%.1f s; tbf rate %@)", link, results.probeSeconds, self.rate))
        table.row(
            "catch-up of \(Report.grouped(count)) events, B's launch → B holds all",
            String(format: "**%.1f s = %@ events/s**", results.seconds, Report.grouped(eventRate)))
        table.row(
            "first event at B after its launch", results.firstEventSeconds.map { String(format: "%.2f s", $0) } ?? "—")
        table.row("payload", String(format: "%.1f bytes/event", Double(results.payloadBytes) / count))
        if let received = results.receivedBytes {
            let megabits = results.seconds > 0 ? received * 8 / 1e6 / results.seconds : 0
            table.row(
                "wire bytes B received (`peersync_bytes_received_total`)",
                String(format: "%@ = **%.1f bytes/event**", Report.grouped(received), received / count))
            table.row(
                "catch-up's effective throughput, B's bytes received / catch-up time",
                String(format: "%.2f Mbit/s = **%.2f× the link**", megabits, link > 0 ? megabits / link : 0))
        } else {
            table.row("wire bytes B received", "— (B's /metrics did not answer)")
        }
        if let sent = results.sentBytes {
            table.row("wire bytes A sent (`peersync_bytes_sent_total`)", Report.grouped(sent))
        }
        table.row(
            "peak RSS (VmHWM) A / B", String(format: "%.0f / %.0f MiB", results.sourcePeakMiB, results.receiverPeakMiB))
        table.row("building A in process (not timed as sync)", String(format: "%.1f s", results.buildSeconds))
        let target = "\(Report.grouped(Double(Self.targetEvents))) events in ≤ \(Int(Self.targetSeconds)) s"
        let verdict: String
        let targetLink = self.rate == "20mbit" && lossPercent == 0.5
        if events == Self.targetEvents && targetLink {
            verdict =
                "- \(results.seconds <= Self.targetSeconds ? "met" : "**not met**"): \(target) "
                + String(format: "(%.1f s)", results.seconds)
        } else {
            verdict =
                "- not measured: \(target) on a 20mbit link with 0.5 % loss; at this run's rate 1M events would "
                + String(format: "take about %.0f s", Double(Self.targetEvents) / max(eventRate, 1e-9))
                + (targetLink ? " (run with `--events 1000000` to measure it)" : " on this run's link")
        }
        return ["### Catch-up over the shaped link", ""] + table.lines + ["", "### Target", "", verdict]
    }

}
