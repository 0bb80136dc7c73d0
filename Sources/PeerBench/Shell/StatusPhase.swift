import DaemonClient
import Foundation
import Replica

/// Phase `status`: read cost of the API on a daemon with 20,000 items and
/// no peers: sequential `GET /status`, then 10 s floods from 4 client
/// threads (a new connection per request) of `/status`, `/items/ID`,
/// `/health`, and of the three mixed.
struct StatusPhase {
    let cluster: LoopbackCluster
    static let items = 20_000
    static let sequentialSamples = 200
    static let floodSeconds = 10.0
    static let floodThreads = 4

    /// Runs the phase; returns its Markdown section.
    func run() throws -> [String] {
        let data = try cluster.initialize("A")
        progress("status: creating \(StatusPhase.items) items in A's replica (in process, before the daemon) ...")
        let ids = try ReplicaSeed.createItems(StatusPhase.items, in: data)
        let a = try cluster.start("A", data: data)

        progress("status: \(StatusPhase.sequentialSamples) sequential GET /status ...")
        var sequential = RequestTally()
        for _ in 0..<StatusPhase.sequentialSamples {
            sequential.time(expecting: 200, seconds: 10) { try a.api.send("GET", "/status") }
        }
        var firstFailure = sequential.firstFailure
        let statusBytes = (try? a.api.send("GET", "/status").body.count) ?? 0
        var floods: [(RequestFlood.Kind, RequestTally, Double)] = []
        for kind in RequestFlood.Kind.allCases {
            progress(
                "status: \(Int(StatusPhase.floodSeconds)) s flood of \(kind.rawValue), \(StatusPhase.floodThreads) threads ..."
            )
            let flood = RequestFlood(api: a.api, kind: kind, ids: ids)
            let (tally, seconds) = flood.run(threads: StatusPhase.floodThreads, seconds: StatusPhase.floodSeconds)
            floods.append((kind, tally, seconds))
            firstFailure = firstFailure ?? tally.firstFailure
        }
        let stats = a.daemon.sample()

        let summary = LatencySummary(sequential.latencies)
        var table = MarkdownTable(["Sequential `GET /status` (20,000 items)", "Value"])
        table.row("Answered 200 of tried", "\(sequential.ok) of \(sequential.tried)")
        table.row("Latency p50 / p99 / max (ms)", Figure.latency(summary))
        table.row("Body size of one answer", Figure.bytes(statusBytes))
        var flood = MarkdownTable([
            "Flood, \(StatusPhase.floodThreads) threads × \(Int(StatusPhase.floodSeconds)) s, new connection per request",
            "Requests answered", "Requests/s", "Failed (timed out)", "Latency p50 / max (ms)",
        ])
        for (kind, tally, seconds) in floods {
            flood.row(
                kind.rawValue, Figure.count(tally.ok), Figure.count(Int((Double(tally.ok) / seconds).rounded())),
                tally.failureText, tally.figures)
        }
        var lines = [
            "### status: read cost with \(Report.grouped(Double(StatusPhase.items))) items",
            "",
            "A with \(Report.grouped(Double(StatusPhase.items))) items (created in process before it started), no peers."
                + " A after the floods: \(Figure.count(stats.threads)) threads, VmRSS \(Figure.mib(stats.residentMiB)) MiB,"
                + " VmHWM \(Figure.mib(stats.peakMiB)) MiB.",
            "",
        ]
        lines += table.lines + [""] + flood.lines
        if let firstFailure { lines += ["", "- first failure: \(firstFailure)"] }
        return lines
    }
}

/// Clients that each send one request after another for a while, each on
/// a new connection (as `DaemonEndpoint.request` does).
struct RequestFlood: Sendable {
    /// What the requests ask for.
    enum Kind: String, CaseIterable, Sendable {
        case status = "`GET /status`"
        case item = "`GET /items/ID` (random existing ids)"
        case health = "`GET /health`"
        case mixed = "mixed: the three in turn"
    }

    let api: DaemonEndpoint
    let kind: Kind
    let ids: [String]

    /// `threads` clients for `seconds`; returns their summed tally and the seconds it took.
    func run(threads: Int, seconds: Double) -> (RequestTally, Double) {
        let start = ContinuousClock.now
        let deadline = start + .milliseconds(Int(seconds * 1000))
        let workers = (0..<threads).map { thread in
            BackgroundWork("flood \(thread)") { [self] in client(thread, until: deadline) }
        }
        var total = RequestTally()
        for worker in workers {
            total.add(worker.wait(seconds: seconds + 30) ?? RequestTally())
        }
        return (total, (ContinuousClock.now - start).seconds)
    }

    private func client(_ thread: Int, until deadline: ContinuousClock.Instant) -> RequestTally {
        var tally = RequestTally()
        var random = SplitMix64(seed: 0x464C_4F4F_44 &+ UInt64(thread))
        var turn = thread
        while ContinuousClock.now < deadline {
            let path: String
            let kind = self.kind == .mixed ? [Kind.status, .item, .health][turn % 3] : self.kind
            turn += 1
            switch kind {
            case .status, .mixed: path = "/status"
            case .item: path = "/items/\(ids[Int(random.next() % UInt64(ids.count))])"
            case .health: path = "/health"
            }
            tally.time(expecting: 200, seconds: 10) { try api.send("GET", path, seconds: 10) }
        }
        return tally
    }
}
