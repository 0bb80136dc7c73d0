import Replica

/// Durable single-event commit latency: `samples` appends, one per
/// transaction with `synchronous=FULL`, into a fresh log, alternating with
/// single-row commits into a fresh raw table (primary key only), so that
/// both see the same disk and the same neighbours.
struct LatencyBenchmark {
    /// Commits timed on each side.
    let samples: Int
    /// Where the databases go.
    let workspace: Workspace

    /// Runs both sides and summarises them.
    func run() throws -> LatencyResult {
        progress("latency: \(samples) single-event commits each ...")
        let logPath = workspace.freshDatabase("latency-log.db")
        defer { workspace.remove(logPath) }
        let log = try EventLog.create(at: logPath, replicaID: "bench-latency")
        var librarySamples: [Duration] = []
        let raw = try RawEventTable.singleCommits(
            samples, seed: ItemWorkload.seed ^ 0x4C41_5459, workspace: workspace, name: "latency-raw.db"
        ) { change in
            let new = NewEvent(item: change.entityID, change.event)
            librarySamples.append(try Stopwatch.time { _ = try log.append(new) })
        }
        return LatencyResult(library: LatencySummary(librarySamples), raw: raw)
    }
}
