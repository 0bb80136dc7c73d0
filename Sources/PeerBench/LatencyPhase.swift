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
        let rawPath = workspace.freshDatabase("latency-raw.db")
        defer {
            workspace.remove(logPath)
            workspace.remove(rawPath)
        }
        let log = try EventLog.create(at: logPath, replicaID: "bench-latency")
        let table = try RawEventTable(path: rawPath, shape: .primaryKeyOnly)
        var workload = ItemWorkload(eventCount: samples, maxItems: 20_000, distribution: .recentHot)
        var random = SplitMix64(seed: ItemWorkload.seed ^ 0x4C41_5459)
        var librarySamples: [Duration] = []
        var rawSamples: [Duration] = []
        librarySamples.reserveCapacity(samples)
        rawSamples.reserveCapacity(samples)
        var seq: Int64 = 0
        while let change = workload.next() {
            seq += 1
            let row = RawRow.single(seq: seq, change, random: &random)
            rawSamples.append(try Stopwatch.time { try table.insert([row]) })
            let new = NewEvent(item: change.entityID, change.event)
            librarySamples.append(try Stopwatch.time { _ = try log.append(new) })
        }
        return LatencyResult(library: LatencySummary(librarySamples), raw: LatencySummary(rawSamples))
    }
}
