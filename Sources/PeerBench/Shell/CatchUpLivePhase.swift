import Foundation

/// Phase `catchup-live`: does a fresh replica's catch-up slow live writes
/// for the others? A holds `events` events of 4 foreign feeds; C is caught
/// up; live samples A→C before, and while a fresh B catches up from A.
struct CatchUpLivePhase {
    let cluster: LoopbackCluster
    /// Events in A.
    let events: Int
    static let baselineSamples = 200
    static let sampleIntervalMs = 50

    /// Runs the phase; returns its Markdown section.
    func run() throws -> [String] {
        let dataA = try cluster.initialize("A")
        progress("catchup-live: building A with \(Report.grouped(Double(events))) events of 4 feeds (in process) ...")
        let buildSeconds = try ReplicaSeed.ingestOriginFeeds(events: events, into: dataA)
        let dataC = try cluster.initialize("C", joining: dataA)
        let dataB = try cluster.initialize("B", joining: dataA)
        let a = try cluster.start("A", data: dataA)
        let target = try a.api.eventCount(seconds: 60)
        let deadline = max(300.0, Double(events) / 1_000)

        let c = try cluster.start("C", data: dataC, peers: [a])
        let cStart = ContinuousClock.now
        try waitUntilHolding(target, c, seconds: deadline, others: [a])
        let cSeconds = (ContinuousClock.now - cStart).seconds
        progress("catchup-live: C caught up in \(Figure.seconds(cSeconds)) s")

        let feed = try ChangeFeed(c.api, name: "C")
        defer { feed.close() }
        let probe = LiveProbe(writer: a.api, receiver: feed, label: "catchup")
        try probe.waitForFirstDelivery()
        progress("catchup-live: baseline: \(CatchUpLivePhase.baselineSamples) live writes A→C ...")
        let baseline = probe.run(count: CatchUpLivePhase.baselineSamples, intervalMs: CatchUpLivePhase.sampleIntervalMs)

        let backlog = try a.api.eventCount(seconds: 60)
        let stop = StopFlag()
        progress("catchup-live: B joins and catches up \(Report.grouped(Double(backlog))) events; sampling A→C ...")
        let bStart = ContinuousClock.now
        let during = BackgroundWork("live samples during the catch-up") {
            probe.run(count: nil, intervalMs: CatchUpLivePhase.sampleIntervalMs, stop: stop)
        }
        var catchUp: Result<Double, Error>
        do {
            let b = try cluster.start("B", data: dataB, peers: [a])
            try waitUntilHolding(backlog, b, seconds: deadline, others: [a, c])
            catchUp = .success((ContinuousClock.now - bStart).seconds)
        } catch {
            catchUp = .failure(error)
        }
        stop.raise()
        let samples = during.wait(seconds: 60) ?? LiveSamples(firstFailure: "the samples did not stop within 60 s")

        var table = MarkdownTable([
            "Live A→C (one write every \(CatchUpLivePhase.sampleIntervalMs) ms)", "C caught up, quiet",
            "while B catches up",
        ])
        table.row("Samples delivered of tried", Figure.delivered(baseline), Figure.delivered(samples))
        table.row("Latency p50 / p99 / max (ms)", Figure.latency(baseline.summary), Figure.latency(samples.summary))
        table.row(
            "… of it the write on A (`POST` until its `201`), p50 / p99 / max (ms)",
            Figure.latency(LatencySummary(baseline.acknowledgements)),
            Figure.latency(LatencySummary(samples.acknowledgements)))
        table.row("Failures", Figure.failures(baseline), Figure.failures(samples))
        var facts = MarkdownTable(["Catch-up", "Value"])
        facts.row(
            "Events in A (4 foreign feeds; built in process in \(Figure.seconds(buildSeconds)) s)", Figure.count(target)
        )
        facts.row("C's catch-up before the baseline (s)", Figure.seconds(cSeconds))
        switch catchUp {
        case .success(let seconds):
            facts.row(
                "B's catch-up: from its launch until its `event_count` reached A's at that time (s)",
                Figure.seconds(seconds))
            facts.row("… events per second", Figure.count(Int(Double(backlog) / max(seconds, 1e-9))))
        case .failure(let error):
            facts.row("B's catch-up", "**did not finish**: \(error)")
        }
        facts.row("Live samples that fell during B's catch-up", Figure.count(samples.attempted))
        var lines = [
            "### catchup-live: live writes while a fresh replica catches up",
            "",
            "A (\(Report.grouped(Double(events))) events), C (`--peer` A, caught up first), then a fresh B "
                + "(`peerd init --join`, `--peer` A). Live = `POST /items` on A until the event is in C's `GET /changes`.",
            "",
        ]
        lines += facts.lines + [""] + table.lines
        let notes = [("quiet", baseline), ("catch-up", samples)].compactMap { name, samples in
            samples.firstFailure.map { "- first live failure (\(name)): \($0)" }
        }
        if !notes.isEmpty { lines += [""] + notes }
        return lines
    }

    /// Polls `replica`'s `/status` every 500 ms until its `event_count` is at least `count`.
    private func waitUntilHolding(_ count: Int, _ replica: PeerProcess, seconds: Double, others: [PeerProcess]) throws {
        var lastReport = ContinuousClock.now
        try waitUntil("\(replica.name) to hold \(count) events", seconds: seconds, pollMs: 500) {
            try replica.daemon.checkRunning()
            for other in others { try other.daemon.checkRunning() }
            let held = (try? replica.api.eventCount(seconds: 10)) ?? 0
            if ContinuousClock.now - lastReport > .seconds(10) {
                lastReport = ContinuousClock.now
                progress(
                    "catchup-live: \(replica.name) holds \(Report.grouped(Double(held))) of \(Report.grouped(Double(count)))"
                )
            }
            return held >= count
        }
    }
}
