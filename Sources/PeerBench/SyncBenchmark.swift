import ChildProcesses
import Foundation
import Replica

/// `peerd-bench sync`: the baselines (raw loopback TCP, raw SQLite ingest),
/// then catch-up of a fresh replica between two `peerd run` processes, then
/// live latency and idle anti-entropy traffic in a three-node mesh of
/// in-process `GossipService`s; the Markdown report goes to standard output.
struct SyncBenchmark {
    /// Events in the source replica a fresh replica catches up from.
    var events = 1_000_000
    /// Single appends on A timed to their fold on B and C.
    var latencySamples = 2_000
    /// Anti-entropy rounds every connection must have sent in the idle measurement.
    var idleRounds = 30
    /// Catch-ups of a fresh replica, each paired with a raw ingest baseline
    /// measured just before it; the report shows the median pair.
    var catchUps = 3
    /// Where the databases go; nil means a fresh temporary directory, removed at the end.
    var directory: String?
    /// Link pruning in the live mesh (`--no-pruning` turns it off, to
    /// measure the duplicates it saves).
    var pruning = true

    /// Runs every phase and prints the report.
    func run() throws {
        let peerd = try Executable.beside("peerd")
        let workspace = try Workspace(directory: directory)
        defer { workspace.finish() }
        progress("peerd-bench sync: work directory \(workspace.path), peerd at \(peerd)")

        progress("baseline: raw loopback TCP, 1 GiB in 128 KiB writes ...")
        let loopback = try LoopbackBaseline.throughput()
        progress("baseline: loopback TCP: \(String(format: "%.0f", loopback.megabytesPerSecond)) MB/s")
        let pingPong = try LoopbackBaseline.pingPong(samples: 2_000)
        let sizeBenchmark = SizeBenchmark(
            size: events, batchSize: 1_000, maxItems: 20_000, workspace: workspace)
        progress("baseline: 500 raw single-row durable commits ...")
        // The floor of one durable store; a live event pays two (append on A, ingest on B).
        let rawCommit = try RawEventTable.singleCommits(
            500, seed: ItemWorkload.seed ^ 0x5359_4E43, workspace: workspace, name: "sync-raw-commit.db")

        let series = try SyncCatchUpBenchmark(events: events, peerd: peerd, workspace: workspace).run(
            times: catchUps
        ) { try sizeBenchmark.rawInsertRate(.primaryKeyOnly) }

        let latency = try SyncMesh.measuring(
            "live", workspace: workspace, antiEntropyIntervalMs: SyncMesh.liveIntervalMs, pruning: pruning
        ) { try SyncLatencyBenchmark(samples: latencySamples, mesh: $0).run() }
        let latencyWithoutFsync = try SyncMesh.measuring(
            "live without fsync", workspace: workspace, antiEntropyIntervalMs: SyncMesh.liveIntervalMs,
            pruning: pruning, durability: .normal
        ) { try SyncLatencyBenchmark(samples: latencySamples, mesh: $0).run() }
        let idle = try SyncMesh.measuring(
            "idle", workspace: workspace, antiEntropyIntervalMs: SyncMesh.idleIntervalMs, pruning: pruning
        ) { try SyncIdleBenchmark(rounds: idleRounds, mesh: $0).run() }

        let report = SyncReport(
            loopback: loopback, pingPong: pingPong, rawIngest: series.median.raw, rawCommit: rawCommit,
            catchUp: series.median.catchUp, catchUpPairs: series.pairs, latency: latency,
            latencyWithoutFsync: latencyWithoutFsync, idle: idle)
        print(report.markdown)
    }
}

/// Polls `condition` every `pollMs` until it holds; throws after `seconds`.
func waitUntil(_ what: String, seconds: Double, pollMs: Int = 10, _ condition: () throws -> Bool) throws {
    guard try Poll.until(timeout: .milliseconds(Int(seconds * 1000)), every: .milliseconds(pollMs), condition) else {
        throw TimedOut(what: what, timeout: .milliseconds(Int(seconds * 1000)), details: "")
    }
}

/// The monotonic clock in nanoseconds (comparable across threads).
func monotonicNanoseconds() -> UInt64 { DispatchTime.now().uptimeNanoseconds }
