import Foundation

/// What `peerd-bench bootstrap` prints: the source, the baselines, each
/// fresh start side by side, where the time went, and the targets.
struct BootstrapReport {
    let benchmark: BootstrapBenchmark
    let setup: BootstrapBenchmark.Setup
    let results: [FreshStart.Result]
    let loadAtEnd: String

    var lines: [String] {
        var lines = ["### The source A", ""] + sourceTable.lines
        lines += ["", "### Baselines (same run)", ""] + baselineTable.lines
        lines += ["", "### Fresh replicas until ready", "", method, ""] + startTable.lines
        lines += ["", "### Where the time goes (checkpoint start, A taking live writes)", ""] + analysis
        lines += ["", "### Targets", ""] + targets
        lines += ["", "_Load average (1 min) \(loadAtEnd) at the end._"]
        return lines
    }

    private var method: String {
        "Each B is a fresh `peerd init --join` of A's cluster code, started with `peerd run --peer A` and timed from "
            + "its launch. The bench reads B's `/status` every 20 ms (every 500 ms while B misses more than 50,000 "
            + "events); once B has started and misses none, it reads `/status` of B and of A at the same instant "
            + "(two threads; each daemon reads its state as the request begins) and, on the same state hash, both "
            + "`/items` likewise; after the same state, A is read again only once B's own `/status` shows `peerd "
            + "wait`'s condition (under writes each read of A hashes its state anew). The live writer posts to A's API from 0.5 s before B's launch until the polling "
            + "ends (10 s past the same state when `peers_in_sync` stays 0); then it stops, both must come to "
            + "`peerd wait`'s readiness on one stable state hash, and B's `replica.db`, opened in process after B "
            + "stopped, must fold to that hash."
    }

    /// The fresh start the targets are about: from the checkpoint while A takes live writes.
    private var liveRun: FreshStart.Result? { results.first { $0.mode == .checkpoint && $0.writesPerSecond > 0 } }

    private var sourceTable: MarkdownTable {
        var table = MarkdownTable(["what", "figure"], leftAligned: 2)
        let count = Double(benchmark.events)
        table.row(
            "history",
            "\(Report.grouped(count)) events of \(setup.feeds) origin feeds over "
                + "\(Report.grouped(Double(setup.sourceItems))) items (`peerd-bench sync`'s workload, recent items "
                + "hot), " + String(format: "%.1f payload bytes/event", Double(setup.payloadBytes) / max(count, 1)))
        table.row("building A in process (not timed as sync)", String(format: "%.1f s", setup.buildSeconds))
        table.row(
            "`peerd checkpoint make --data A` (a child, before A's daemon starts; signed with A's identity key)",
            String(
                format: "**%.2f s**, peak RSS %.0f MiB; checkpoint %@… covers %@ events, %@ entities",
                setup.makeSeconds, setup.makePeakMiB, String(setup.checkpoint.prefix(16)),
                Report.grouped(Double(setup.coveredEvents)), Report.grouped(Double(setup.entities))))
        return table
    }

    private var baselineTable: MarkdownTable {
        var table = MarkdownTable(["baseline", "figure", "what it means here"], leftAligned: 1)
        let bytes = liveRun?.started.flatMap { Double($0["bytes"] ?? "") } ?? 0
        if let raw = setup.rawInsert {
            let rate = raw.eventsPerSecond
            table.row(
                "raw SQLite insert: bare prepared INSERT, integer primary key only, batches of 1,000, WAL, "
                    + "synchronous=FULL",
                "\(Report.grouped(rate)) rows/s",
                String(
                    format: "%@ rows (one per base) would take %.0f ms; %@ rows (the history) %.2f s",
                    Report.grouped(Double(setup.entities)), Double(setup.entities) / max(rate, 1e-9) * 1000,
                    Report.grouped(Double(benchmark.events)), Double(benchmark.events) / max(rate, 1e-9)))
        }
        if let loopback = setup.loopback {
            table.row(
                "raw loopback TCP, one stream, 1 GiB in 128 KiB writes",
                String(format: "%.0f MB/s", loopback.megabytesPerSecond),
                String(
                    format: "the bases' %@ (`checkpoint.started` `bytes`) would take %.1f ms", Figure.bytes(Int(bytes)),
                    bytes / 1e6 / max(loopback.megabytesPerSecond, 1e-9) * 1000))
        }
        if let pingPong = setup.pingPong {
            table.row(
                "raw loopback TCP ping-pong, 200 bytes, TCP_NODELAY",
                "p50 \(Figure.micro(pingPong.p50)) µs, p99 \(Figure.micro(pingPong.p99)) µs", "one round trip")
        }
        if setup.probeBytes > 0 {
            let megabits = setup.probeMegabitsPerSecond
            table.row(
                "link, raw TCP \(benchmark.probeMegabytes) MB host 1 → host 2 (`peerd-bench link-probe`, first byte "
                    + "to end)",
                String(format: "%.2f Mbit/s (%.1f s)", megabits, setup.probeSeconds),
                String(
                    format: "the bases' %@ (`checkpoint.started` `bytes`) would take %.2f s", Figure.bytes(Int(bytes)),
                    bytes * 8 / 1e6 / max(megabits, 1e-9)))
        }
        return table
    }

    private var startTable: MarkdownTable {
        var header = ["B's launch → …"]
        for result in results {
            let start = result.mode == .checkpoint ? "from the checkpoint (the default)" : "`--start-from replay`"
            header.append(result.writesPerSecond > 0 ? "\(start), A taking live writes" : "\(start), A quiet")
        }
        var table = MarkdownTable(header, leftAligned: 1)
        func row(_ name: String, _ cell: (FreshStart.Result) -> String) { table.row([name] + results.map(cell)) }
        row(
            "**ready, as `peerd wait --converged-with 1`**: `peers_in_sync` ≥ 1, `events_missing` 0, A's state hash, "
                + "`/items` complete"
        ) { result in
            result.waitReadySeconds.map { String(format: "**%.3f s**", $0) }
                ?? "**never** (polled \(Int(FreshStart.inSyncGraceSeconds)) s past the same state)"
        }
        row("**same state**: connected, `events_missing` 0, A's state hash at the same moment, `/items` complete") {
            $0.readySeconds.map { String(format: "**%.3f s**", $0) } ?? "—"
        }
        row("load average (1 min) just before B's launch") { $0.loadAtLaunch }
        row("`peerd run` printed its addresses (`listening on`)") { seconds($0.launchedSeconds) }
        row("B's `/status` answered first") { seconds($0.firstAnswerSeconds) }
        row("B logged `listening` / `peer.identified` / `checkpoint.started` (its `ts=`)") { result in
            [result.listeningLogged, result.identifiedLogged, result.startedLogged].map { seconds($0) }.joined(
                separator: " / ")
        }
        row("`checkpoint.started` seen by the bench in B's log (read with each `/status`)") {
            seconds($0.startedLoggedSeconds)
        }
        row("B's `/status` first showed a checkpoint") { seconds($0.checkpointShownSeconds) }
        row("`/status` of B and A read at once: `events_missing` 0, the same state hash") {
            seconds($0.sameStateSeconds)
        }
        row("… then `GET /items` of B and A read at once: B's answered, as many items as A's") {
            seconds($0.readySeconds)
        }
        row("B's `peers_in_sync` first ≥ 1") { seconds($0.firstInSyncSeconds) }
        row("`checkpoint.started`: `ms` / `bytes` / `entities`") { result in
            guard let started = result.started else { return "—" }
            let bytes = Int(started["bytes"] ?? "").map(Figure.bytes) ?? "?"
            return "\(started["ms"] ?? "?") ms / \(bytes) / \(Figure.count(Int(started["entities"] ?? "")))"
        }
        row(
            "polling rounds from B's start until ready: B missing events / none missing but another state hash / same hash, other item count"
        ) {
            "\($0.missingRounds) / \($0.hashMisses) / \($0.itemMisses)"
        }
        row("items listed at ready (B = A)") { Figure.count($0.items) }
        row("`event_count` at ready, B / A (B counts the events it holds)") {
            "\(Figure.count($0.eventsHeld)) / \(Figure.count($0.sourceEvents))"
        }
        row("A's events past the checkpoint at B's launch") {
            Figure.count($0.sourceEventsAtLaunch - setup.coveredEvents)
        }
        row("B's `/status` `checkpoint.history_held`") { $0.historyHeld.map { "\($0)" } ?? "— (no checkpoint)" }
        row("wire bytes B received until ready (`peersync_bytes_received_total`)") { result in
            result.receivedAtReady.map { Figure.bytes(Int($0)) } ?? "—"
        }
        row("… and at the end") { result in result.receivedAtEnd.map { Figure.bytes(Int($0)) } ?? "—" }
        row("`replica.db` (+ WAL) B / A, after B stopped") {
            "\(megabytes($0.receiverDatabase)) / \(megabytes($0.sourceDatabase))"
        }
        row("peak RSS (VmHWM) B / A") { String(format: "%.0f / %.0f MiB", $0.receiverPeakMiB, $0.sourcePeakMiB) }
        row("`GET /status` while polling: B alone; B and A at once: p50 / max (ms)") { result in
            let b = LatencySummary(result.receiverStatus)
            let both = LatencySummary(result.sourceStatus)
            return "\(Figure.ms(b.p50)) / \(Figure.ms(b.max)); \(Figure.ms(both.p50)) / \(Figure.ms(both.max))"
        }
        row("B's `GET /items` (read at once with A's), when compared: p50 / max (ms)") { result in
            let both = LatencySummary(result.receiverItems)
            return "\(Figure.ms(both.p50)) / \(Figure.ms(both.max))"
        }
        row("live writes to A, from 0.5 s before B's launch until polling ended (`POST /items` 1 in 10, else an event)")
        { result in
            let writes = result.writes
            guard result.writesPerSecond > 0 else { return "none" }
            let latency = LatencySummary(writes.latencies)
            var text = String(
                format: "%d (%d new items, %d edits) in %.1f s = %.1f/s; p50 / p99 %@ / %@ ms", writes.writes,
                writes.creates, writes.updates, writes.seconds, writes.perSecond, Figure.ms(latency.p50),
                Figure.ms(latency.p99))
            if writes.failures > 0 { text += "; **\(writes.failures) failed**: \(writes.firstFailure ?? "")" }
            return text
        }
        row("writer stopped → `peerd wait`'s readiness on a stable state hash, same item count") { result in
            String(
                format: "%.2f s; %@…, %@ items; B's replica.db, opened after it stopped, folds to it",
                result.finalSeconds, String(result.finalStateHash.prefix(16)), Figure.count(result.finalItems))
        }
        return table
    }

    private var analysis: [String] {
        guard let run = liveRun, let ready = run.readySeconds else { return ["- B was not ready: no figures"] }
        guard let started = run.started, let ms = Double(started["ms"] ?? ""),
            let startedAt = run.startedLogged ?? run.startedLoggedSeconds
        else { return ["- B did not log `checkpoint.started`: no split of the time"] }
        let listening = run.listeningLogged ?? run.launchedSeconds
        let identified = run.identifiedLogged ?? listening
        let fetchBegan = max(identified, startedAt - ms / 1000)
        let sameState = run.sameStateSeconds ?? ready
        var table = MarkdownTable(["span of B's time to the same state", "ms", "share"], leftAligned: 1)
        func span(_ name: String, _ from: Double, _ to: Double) {
            table.row(name, Figure.fixed((to - from) * 1000, 0), String(format: "%.0f %%", (to - from) / ready * 100))
        }
        span("launch → B logged `listening` (process start, opening the log)", 0, listening)
        span("→ B logged `peer.identified` for A (dial, handshake)", listening, identified)
        span("→ the bases asked for (A shows its checkpoint; `checkpoint.started` `ts` − `ms`)", identified, fetchBegan)
        span(
            "→ B logged `checkpoint.started` (fetching the bases page by page, starting from them: its `ms`)",
            fetchBegan, startedAt)
        span(
            "→ `/status` of B and A at once: the same state hash (the tail; B polled every 20 ms)", startedAt, sameState
        )
        span("→ B's `GET /items` answered (read at once with A's): the same count (ready)", sameState, ready)
        var lines = table.lines
        let bytes = Double(started["bytes"] ?? "") ?? 0
        if let raw = setup.rawInsert, let entities = Int(started["entities"] ?? "") {
            var line = String(
                format: "- the `ms` of `checkpoint.started` (%.0f ms) against the same run's baselines: %@ bare "
                    + "SQLite rows take %.0f ms", ms, Report.grouped(Double(entities)),
                Double(entities) / max(raw.eventsPerSecond, 1e-9) * 1000)
            if let loopback = setup.loopback {
                line += String(
                    format: ", its %@ over raw loopback TCP %.1f ms", Figure.bytes(Int(bytes)),
                    bytes / 1e6 / max(loopback.megabytesPerSecond, 1e-9) * 1000)
            }
            if setup.probeBytes > 0 {
                line += String(
                    format: ", over the link's raw TCP %.2f s",
                    bytes * 8 / 1e6 / max(setup.probeMegabitsPerSecond, 1e-9))
            }
            lines += ["", line]
        }
        if run.waitReadySeconds == nil {
            lines.append(
                "- `peers_in_sync` stayed 0 while A took writes: B counts a peer in sync only once that peer's "
                    + "last reported state hash equals its own, and a node hashes and reports its state only after "
                    + "an anti-entropy round (1 s) in which its cursor did not move "
                    + "(`SyncNode.antiEntropyRound`); a write at least once a second keeps A from ever reporting")
        }
        if let quiet = results.first(where: { $0.mode == .checkpoint && $0.writesPerSecond == 0 }),
            let quietReady = quiet.waitReadySeconds
        {
            lines.append(
                String(
                    format: "- with A quiet, `peerd wait`'s readiness came at %.3f s, the same state at %.3f s",
                    quietReady, quiet.readySeconds ?? .nan))
        }
        if let replay = results.first(where: { $0.mode == .replay }), let replayReady = replay.readySeconds {
            lines.append(
                String(
                    format: "- the same fresh B replaying the whole history showed the same state after %.2f s = "
                        + "%.1f× the checkpoint start", replayReady, replayReady / ready))
        }
        return lines
    }

    private var targets: [String] {
        let wifi = benchmark.link == .wifi
        let target = wifi ? BootstrapBenchmark.wifiTargetSeconds : BootstrapBenchmark.loopbackTargetSeconds
        let place = wifi ? "over the Wi-Fi-like link (20mbit tbf, 0.5 % loss)" : "over loopback"
        let text =
            "\(Report.grouped(Double(BootstrapBenchmark.targetEvents))) events over 20,000 items ready in ≤ "
            + "\(Figure.fixed(target, 1)) s \(place) while A takes live writes"
        guard let run = liveRun, let same = run.readySeconds else {
            return ["- **not met**: \(text) (B did not show A's state)"]
        }
        let linkMatches = !wifi || (benchmark.rate == "20mbit" && benchmark.lossPercent == 0.5)
        let strict = run.waitReadySeconds.map { String(format: "%.3f s", $0) } ?? "never while A took writes"
        let figures = String(format: "`peerd wait` readiness %@; the same state %.3f s", strict, same)
        guard benchmark.events == BootstrapBenchmark.targetEvents && linkMatches else {
            return [
                "- not measured: \(text); this run had \(Report.grouped(Double(benchmark.events))) events"
                    + (linkMatches ? "" : " on another link") + " (\(figures))"
            ]
        }
        let live = run.writes.writes > 0 && run.writes.failures == 0
        var notes = ", \(run.writes.writes) live writes meanwhile"
        if run.writes.failures > 0 { notes += ", **\(run.writes.failures) failed**" }
        if !run.startedFromCheckpoint { notes += ", **B did not start from the checkpoint**" }
        let valid = live && run.startedFromCheckpoint
        let strictMet = valid && (run.waitReadySeconds.map { $0 <= target } ?? false)
        let sameMet = valid && same <= target
        return [
            "- \(strictMet ? "met" : "**not met**"): \(text), ready as the issue defines it (`peerd wait "
                + "--converged-with 1`, equal state hashes, `/items` complete): \(strict)\(notes)",
            "- \(sameMet ? "met" : "**not met**") without `peers_in_sync`: the same state hash on both and `/items` "
                + String(format: "complete at %.3f s", same),
        ]
    }

    private func seconds(_ value: Double?) -> String { value.map { String(format: "%.3f s", $0) } ?? "—" }

    private func megabytes(_ size: (main: Int64, wal: Int64)) -> String {
        Figure.fixed(Double(size.main) / 1e6, 1) + (size.wal > 0 ? " + " + Figure.fixed(Double(size.wal) / 1e6, 1) : "")
            + " MB"
    }
}
