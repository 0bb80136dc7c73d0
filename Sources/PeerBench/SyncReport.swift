import Foundation
import Gossip
import SyncProtocol

/// Everything `peerd-bench sync` measured, printed as Markdown.
struct SyncReport {
    var loopback: LoopbackThroughput
    var pingPong: LatencySummary
    /// The bare raw SQLite row (integer primary key only, batches of 1,000)
    /// measured just before `catchUp`.
    var rawIngest: PhaseResult
    var rawCommit: LatencySummary
    /// The catch-up of the median pair, which the tables and targets show.
    var catchUp: CatchUpResult
    /// Every catch-up with its own raw baseline, in the order they ran.
    var catchUpPairs: [CatchUpPair]
    var latency: LiveLatencyResult
    /// The same mesh and appends with `synchronous=NORMAL`: the path's CPU
    /// and thread hops without its three fsyncs.
    var latencyWithoutFsync: LiveLatencyResult
    var idle: IdleResult

    var markdown: String {
        let heading = [
            "## peerd-bench sync results", "", Markdown.command,
            "- machine: \(Report.machine), SQLite \(RawEventTable.sqliteVersion)",
            "- workload: item events (mean payload \(Figure.fixed(meanPayload, 1)) bytes) of "
                + "\(catchUp.feeds) origin feeds over 20,000 items, recent items hot; 1 MB = 10^6 bytes",
        ]
        let sections = [
            ("Baselines (same run)", baselineTable),
            (
                "Catch-up of a fresh replica (two `peerd run` processes, loopback TCP)",
                catchUpTable + [""] + catchUpNotes
            ),
            ("Where the catch-up time goes (CPU per event)", catchUpAnalysis),
            (
                "Live propagation (A, B, C in one process, full mesh, durability FULL)",
                latencyTable + [""] + latencyNotes
            ),
            (
                "Anti-entropy traffic when nothing changed (wire bytes, framing and encryption included)",
                idleTable + [""] + idleNotes
            ),
            ("Targets", targetTable),
        ]
        return (heading + sections.flatMap { ["", "### \($0.0)", ""] + $0.1 }).joined(separator: "\n")
    }

    private var meanPayload: Double { Double(catchUp.payloadBytes) / Double(max(catchUp.events, 1)) }

    private var baselineTable: [String] {
        let gibibytes = Figure.fixed(Double(loopback.bytes) / Double(1 << 30), 1)
        let chunk = Report.grouped(Double(loopback.chunk / 1024))
        let stream =
            "| raw loopback TCP, one stream | \(Figure.fixed(loopback.megabytesPerSecond, 0)) MB/s | "
            + "\(gibibytes) GiB in \(chunk) KiB writes, one thread sends, one reads, "
            + "\(Figure.fixed(loopback.seconds, 2)) s |"
        let pingPongRow =
            "| raw loopback TCP ping-pong, 200 bytes, TCP_NODELAY | p50 \(Figure.micro(pingPong.p50)) µs, "
            + "p99 \(Figure.micro(pingPong.p99)) µs | \(Report.grouped(Double(pingPong.count))) round trips |"
        let rows = Report.grouped(Double(rawIngest.events))
        let ingest =
            "| raw SQLite ingest: bare prepared INSERT, integer primary key only, batches of 1,000 | "
            + "\(Report.grouped(rawIngest.eventsPerSecond)) rows/s | \(rows) rows of the same workload, "
            + "\(Figure.fixed(rawIngest.payloadMBPerSecond, 1)) payload MB/s, "
            + "\(Figure.fixed(rawIngest.cpuMicrosecondsPerEvent, 1)) µs CPU/row, WAL, synchronous=FULL |"
        let commit =
            "| raw SQLite single-row durable commit | p50 \(Figure.milli(rawCommit.p50)) ms, "
            + "p99 \(Figure.milli(rawCommit.p99)) ms | \(Report.grouped(Double(rawCommit.count))) "
            + "`BEGIN IMMEDIATE; INSERT; COMMIT`, synchronous=FULL |"
        return ["| Baseline | Figure | Notes |", "|---|---:|---|", stream, pingPongRow, ingest, commit]
    }

    private var catchUpTable: [String] {
        let run = catchUp
        return [
            "| Events | Time (s) | Events/s | vs raw SQLite ingest | Wire MB/s | vs loopback TCP | Payload MB/s "
                + "| Peak RSS A (MiB) | Peak RSS B (MiB) | CPU A (µs/event) | CPU B (µs/event) | B disk written (MB) |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
            "| \(Report.grouped(Double(run.events))) | \(Figure.fixed(run.seconds, 1)) | "
                + "\(Report.grouped(run.eventsPerSecond)) | "
                + "\(Report.ratio(run.eventsPerSecond / max(rawIngest.eventsPerSecond, 1e-9))) | "
                + "\(Figure.fixed(run.wireMBPerSecond, 2)) | "
                + "\(Figure.smallRatio(run.wireMBPerSecond / max(loopback.megabytesPerSecond, 1e-9))) | "
                + "\(Figure.fixed(run.payloadMBPerSecond, 2)) | \(Figure.fixed(run.source.peakMiB, 1)) | "
                + "\(Figure.fixed(run.receiver.peakMiB, 1)) | \(perEvent(run.source.cpuSeconds)) | "
                + "\(perEvent(run.receiver.cpuSeconds)) | "
                + "\(run.receiver.diskWrittenBytes.map { Figure.fixed(Double($0) / 1e6, 0) } ?? "—") |",
        ]
    }

    private var catchUpNotes: [String] {
        let run = catchUp
        let quarters = run.quarterRates.map { Report.grouped($0) }.joined(separator: " → ")
        let pairs = catchUpPairs.map {
            "\(Report.grouped($0.catchUp.eventsPerSecond)) / \(Report.grouped($0.raw.eventsPerSecond)) = "
                + "\(Report.ratio($0.ratio)) (B \(perEvent($0.catchUp.receiver.cpuSeconds)) µs/event, "
                + "peak \(Figure.fixed($0.catchUp.receiver.peakMiB, 1)) MiB)"
        }
        return [
            "- \(catchUpPairs.count) catch-ups of a fresh B from the same A, each right after its own raw SQLite "
                + "baseline (catch-up events/s / raw rows/s): \(pairs.joined(separator: "; ")); this table, the "
                + "baselines above and the targets show the median pair",
            "- timed from launching B (`peerd run --peer A`) until B's database held every event (polled read-only "
                + "every 100 ms); B printed `listening` after \(Figure.fixed(run.receiverListeningSeconds, 2)) s, "
                + "its first events were seen after \(run.firstEventSeconds.map { Figure.fixed($0, 2) } ?? "—") s; "
                + "B had written every projection row after "
                + "\(run.projectionsWrittenSeconds.map { Figure.fixed($0, 2) } ?? "—") s (its reads fold the "
                + "rows still pending, so they show every event from the first figure on)",
            "- events/s by quarter of the log: \(quarters)",
            "- wire: \(Figure.fixed(Double(run.wireBytes) / 1e6, 1)) MB A → B in "
                + "\(Report.grouped(Double(run.pipeline.framesToTarget))) sealed frames "
                + "(\(Report.grouped(Double(run.pipeline.batches))) events batches of up to "
                + "\(Report.grouped(Double(SyncSession.Configuration().batchEvents))) events; "
                + "\(Figure.fixed(Double(run.wireBytes) / Double(max(run.events, 1)), 1)) bytes/event), "
                + "\(Report.grouped(Double(run.pipeline.bytesToSource))) bytes B → A (acks, cursor); exact, from the "
                + "in-process replay of the same session below (handshake and timer rounds not counted); "
                + "payload MB/s counts payload bytes only",
            "- peak RSS = VmHWM of each `peerd run` process at the end; VmRSS sampled during: A up to "
                + "\(Figure.fixed(run.sourceMaxResidentMiB, 0)) MiB, B up to "
                + "\(Figure.fixed(run.receiverMaxResidentMiB, 0)) MiB",
            "- B's state hash and event count equal A's after catch-up: \(run.statesMatch ? "yes" : "**no**")",
            "- A was built beforehand in this process (EventLog.ingest, batches of 10,000) in "
                + "\(Figure.fixed(run.buildSeconds, 1)) s = "
                + "\(Report.grouped(Double(run.events) / max(run.buildSeconds, 1e-9))) events/s (interleaved by time, "
                + "no refolds)",
        ]
    }

    private var catchUpAnalysis: [String] {
        let run = catchUp
        let pipeline = run.pipeline
        let totalCPU = pipeline.stages.reduce(0) { $0 + $1.1.cpuSeconds }
        var lines = [
            "| Part | Wall (s) | CPU (s) | CPU µs/event | Share of the in-process CPU |",
            "|---|---:|---:|---:|---:|",
        ]
        for (name, watch) in pipeline.stages {
            lines.append(
                "| \(name) | \(Figure.fixed(watch.seconds, 2)) | \(Figure.fixed(watch.cpuSeconds, 2)) | "
                    + "\(perEvent(watch.cpuSeconds)) | \(Figure.fixed(watch.cpuSeconds / max(totalCPU, 1e-9) * 100, 0))% |"
            )
        }
        let inProcessRate = Double(run.events) / max(pipeline.totalSeconds, 1e-9)
        lines.append(
            "| **in process, one thread, all stages** | \(Figure.fixed(pipeline.totalSeconds, 2)) | "
                + "\(Figure.fixed(totalCPU, 2)) | \(perEvent(totalCPU)) | "
                + "\(Report.grouped(inProcessRate)) events/s |")
        let sourceBusy = run.source.cpuSeconds / max(run.seconds, 1e-9)
        let receiverBusy = run.receiver.cpuSeconds / max(run.seconds, 1e-9)
        lines.append(
            "| `peerd run` A, whole process over the catch-up | \(Figure.fixed(run.seconds, 2)) | "
                + "\(Figure.fixed(run.source.cpuSeconds, 2)) | \(perEvent(run.source.cpuSeconds)) | "
                + "busy \(Figure.fixed(sourceBusy * 100, 0))% of a core |")
        lines.append(
            "| `peerd run` B, whole process over the catch-up | \(Figure.fixed(run.seconds, 2)) | "
                + "\(Figure.fixed(run.receiver.cpuSeconds, 2)) | \(perEvent(run.receiver.cpuSeconds)) | "
                + "busy \(Figure.fixed(receiverBusy * 100, 0))% of a core |")
        lines.append("")
        lines.append(contentsOf: catchUpCeilings)
        return lines
    }

    /// What the two processes' CPU per event allows on this machine's cores, against half of raw.
    private var catchUpCeilings: [String] {
        let run = catchUp
        let cores = Double(ProcessInfo.processInfo.activeProcessorCount)
        let events = Double(max(run.events, 1))
        let source = run.source.cpuSeconds * 1e6 / events
        let receiver = run.receiver.cpuSeconds * 1e6 / events
        let raw = max(rawIngest.eventsPerSecond, 1e-9)
        func ceiling(_ microseconds: Double) -> String {
            let rate = 1e6 / max(microseconds, 1e-9)
            return "\(Report.grouped(rate)) events/s (\(Report.ratio(rate / raw)) of raw)"
        }
        let budget = cores * 1e6 / (raw / 2)
        return [
            "- ceilings from these CPU figures: A and B perfectly overlapped on \(Int(cores)) cores, at most "
                + "\(ceiling((source + receiver) / cores)); A alone with a receiver that cost nothing, "
                + "\(ceiling(source)); B alone with a source that cost nothing, \(ceiling(receiver))",
            "- half of raw leaves A and B together \(Figure.fixed(budget, 1)) µs of CPU per event on "
                + "\(Int(cores)) cores; they spent \(Figure.fixed(source + receiver, 1))",
        ]
    }

    private var latencyTable: [String] {
        func row(_ name: String, _ figures: LatencySummary) -> String {
            "| \(name) | \(Report.grouped(Double(figures.count))) | \(Figure.milli(figures.p50)) | "
                + "\(Figure.milli(figures.p99)) | \(Figure.milli(figures.max)) |"
        }
        return [
            "| Path | Samples | p50 (ms) | p99 (ms) | max (ms) |",
            "|---|---:|---:|---:|---:|",
            row("`append` on A (durable local commit, push queued)", latency.append),
            row("A `append` → stored and folded on B (B dialed A)", latency.toB),
            row("A `append` → stored and folded on C (C dialed A and B)", latency.toC),
            row("diagnostic, `synchronous=NORMAL` (no fsync): `append` on A", latencyWithoutFsync.append),
            row("diagnostic, `synchronous=NORMAL`: A `append` → B", latencyWithoutFsync.toB),
            row("diagnostic, `synchronous=NORMAL`: A `append` → C", latencyWithoutFsync.toC),
        ]
    }

    private var latencyNotes: [String] {
        var lines = [
            "- one append at a time: the next follows as soon as B and C both stored the previous one; timed from "
                + "just before `GossipService.append` on A to the `onStored` callback on B and on C (after the "
                + "ingest's durable commit and fold)",
            "- anti-entropy every \(SyncMesh.liveIntervalMs) ms (the default) on every node",
            "- a floor for comparison: two durable commits (raw p50 \(Figure.milli(rawCommit.p50)) ms each) plus "
                + "one loopback hop (p50 \(Figure.micro(pingPong.p50 / 2)) µs); all three nodes share 2 cores and one disk",
            "- the diagnostic rows run the same appends on a second mesh whose logs commit without fsync (not a "
                + "setting `peerd` offers): what is left is the path's CPU and thread hops; the difference to the "
                + "rows above is the three durable commits (A's, then B's and C's at once on the one disk)",
        ]
        for (name, statistics) in zip(["B", "C"], latency.receivers) {
            lines.append(
                "- \(name) received \(Report.grouped(Double(statistics.eventsReceived))) events and stored "
                    + "\(Report.grouped(Double(statistics.eventsStored))): "
                    + "\(Report.grouped(Double(statistics.eventsReceived - statistics.eventsStored))) were duplicates "
                    + "(copies the other receiver forwarded before a prune stopped them; `--no-pruning`: every one)")
        }
        return lines
    }

    private var idleTable: [String] {
        var lines = [
            "| Direction | Rounds counted | Bytes/round | Smallest | Largest |",
            "|---|---:|---:|---:|---:|",
        ]
        for link in idle.links {
            lines.append(
                "| \(link.from) → \(link.to) | \(link.rounds) | \(Figure.fixed(link.bytesPerRound, 1)) | "
                    + "\(link.smallest) | \(link.largest) |")
        }
        return lines
    }

    private var idleNotes: [String] {
        let changed = idle.changedRounds.map { "\($0.from) → \($0.to) \($0.bytes)" }.joined(separator: ", ")
        let summaries = idle.summaryRounds.map { "\($0.from) → \($0.to) \($0.bytes)" }.joined(separator: ", ")
        let pushes = idle.pushBytesPerEvent.sorted()
        let medianPush = pushes.isEmpty ? 0 : pushes[pushes.count / 2]
        return [
            "- anti-entropy every \(idle.intervalMs) ms on every node (default 1,000 ms) for this measurement; "
                + "\(Figure.fixed(idle.idleSeconds, 1)) s; each move of a connection's `bytesSent` counts as one "
                + "round (polled every ms); the first \(SyncIdleBenchmark.warmUpRounds) moves are skipped",
            "- computed with `MessageEncoder`: an idle round is one empty cursor message, "
                + "\(idle.computed.emptyRoundFrame) bytes sealed; each changed feed adds "
                + "\(idle.computed.perChangedFeed) bytes (feed index and a head of 123,456 as varints; 3 for a head under 16,384), and a feed named for the "
                + "first time on a connection adds \(idle.computed.firstDeclaration) bytes once (its replica id and scope)",
            "- the round after one append on A (largest of \(SyncIdleBenchmark.changeTrials) trials, bytes): "
                + "\(changed.isEmpty ? "—" : changed)",
            "- a node whose change round fell inside the push: its next round was the first quiet one, which also "
                + "sends each peer the state summary once (\(idle.computed.stateFrame)+ bytes sealed: event count "
                + "and state hash), bytes: \(summaries.isEmpty ? "none in these trials" : summaries)",
            "- the push of one new event itself (events to B and C, acks, any duplicate push between B and C), "
                + "all connections together: median \(Report.grouped(Double(medianPush))) bytes "
                + "(trials: \(pushes.map(String.init).joined(separator: ", ")))",
        ]
    }

    private var targetTable: [String] {
        let run = catchUp
        let half = rawIngest.eventsPerSecond / 2
        let worstP50 = max(latency.toB.p50, latency.toC.p50)
        let wirePerEvent = Double(run.wireBytes) / Double(max(run.events, 1))
        let peakRSS = max(run.source.peakMiB, run.receiver.peakMiB)
        let receptions = latency.receivers.map { Double($0.eventsReceived) / Double(max($0.eventsStored, 1)) }
        let idleWorst = idle.largestRound
        let changedExtra = (idle.changedRounds.map(\.bytes).max() ?? 0) - idleWorst
        let summaryWorst = idle.summaryRounds.map(\.bytes).max()
        func met(_ condition: Bool) -> String { condition ? "met" : "**not met**" }
        return [
            "| Target | Figure | |",
            "|---|---:|---|",
            "| catch-up ≥ ½ of raw SQLite ingest (\(Report.grouped(half)) events/s) | "
                + "\(Report.grouped(run.eventsPerSecond)) events/s = "
                + "\(Report.ratio(run.eventsPerSecond / max(rawIngest.eventsPerSecond, 1e-9))) of raw "
                + "(by CPU time: raw \(Figure.fixed(rawIngest.cpuMicrosecondsPerEvent, 1)) µs/row, B "
                + "\(perEvent(run.receiver.cpuSeconds)) µs/event = "
                + "\(Report.ratio(rawIngest.cpuMicrosecondsPerEvent / max(run.receiver.cpuSeconds * 1e6 / Double(max(run.events, 1)), 1e-9)))) | "
                + "\(met(run.eventsPerSecond >= half)) |",
            "| wire ≤ 35 bytes per event in the catch-up | \(Figure.fixed(wirePerEvent, 1)) bytes/event | "
                + "\(met(wirePerEvent <= 35)) |",
            "| peak RSS ≤ 48 MiB on both sides of the catch-up | A \(Figure.fixed(run.source.peakMiB, 1)) MiB, "
                + "B \(Figure.fixed(run.receiver.peakMiB, 1)) MiB | \(met(peakRSS <= 48)) |",
            "| live p50 ≤ 2 ms on loopback (B and C) | B \(Figure.milli(latency.toB.p50)) ms, "
                + "C \(Figure.milli(latency.toC.p50)) ms (without fsync: B "
                + "\(Figure.milli(latencyWithoutFsync.toB.p50)) ms, C \(Figure.milli(latencyWithoutFsync.toC.p50)) ms) "
                + "| \(met(worstP50 <= 0.002)) |",
            "| each live event received ≤ 1.1 times per node | "
                + zip(["B", "C"], receptions).map { "\($0) \(Figure.fixed($1, 3))" }.joined(separator: ", ")
                + " | \(met(receptions.allSatisfy { $0 <= 1.1 })) |",
            "| idle round < 100 bytes per peer | largest \(idleWorst) bytes, mean "
                + "\(Figure.fixed(idle.meanBytesPerRound, 1)) | \(met(idleWorst > 0 && idleWorst < 100)) |",
            "| + a few bytes per changed feed | +\(changedExtra) bytes measured, +\(idle.computed.perChangedFeed) "
                + "computed (and once per change, not per feed, a \(idle.computed.stateFrame)-byte state summary; "
                + "largest round with it: \(summaryWorst.map { "\($0) bytes" } ?? "none seen")) | "
                + "\(met(changedExtra <= 8 && idle.computed.perChangedFeed <= 8 && (summaryWorst ?? 0) < 100)) |",
        ]
    }

    private func perEvent(_ seconds: Double) -> String {
        Figure.fixed(seconds * 1e6 / Double(max(catchUp.events, 1)), 1)
    }
}
