import Replica

extension SizeBenchmark {
    /// The name of the bare baseline row, which every "vs raw" ratio divides by.
    static let rawBareName = "raw SQLite (integer primary key only)"
    /// The name of the baseline row with the indexes of `events`.
    static let rawIndexedName = "raw SQLite, same indexes (+ UNIQUE(feed,seq), entity)"

    /// The baselines: the recent-hot workload's rows (same payloads, same
    /// entity numbers, random 16-byte ids) inserted with bare prepared
    /// statements, `batch` rows per transaction (default `batchSize`).
    func rawInsertRate(_ shape: RawEventTable.Shape, batch: Int? = nil) throws -> PhaseResult {
        let batch = batch ?? batchSize
        var name: String
        switch shape {
        case .primaryKeyOnly: name = SizeBenchmark.rawBareName
        case .sameIndexes: name = SizeBenchmark.rawIndexedName
        case .feedSeqIndexOnly: name = "raw SQLite, UNIQUE(feed,seq) only (no entity index)"
        case .eventLogStatements: name = "raw SQLite, EventLog's statements (schema 2, rows every 20,000 events)"
        case .randomIDIndex: name = "raw SQLite, + an index of the random ids"
        }
        if batch != batchSize { name += ", batches of \(Report.grouped(Double(batch)))" }
        let analysis =
            batch != batchSize || shape == .feedSeqIndexOnly || shape == .eventLogStatements || shape == .randomIDIndex
        let path = workspace.freshDatabase("raw-\(shape)-\(batch)-\(size).db")
        defer { workspace.remove(path) }
        var outcome = try phase(name) {
            let table = try RawEventTable(path: path, shape: shape)
            var workload = workload(.recentHot)
            var random = SplitMix64(seed: ItemWorkload.seed ^ 0x5241_5721)
            let baseTimeMs = SizeBenchmark.wallClockMs() - Int64(size)
            var watch = Stopwatch()
            var bytes = 0
            var seq: Int64 = 0
            while true {
                let arrivalMs = SizeBenchmark.wallClockMs()
                let rows = workload.nextBatch(batch).map { change in
                    seq += 1
                    return RawRow(
                        feed: 1, seq: seq, eventID: random.uuidBytes(), timeMs: baseTimeMs + seq,
                        entity: Int64(change.item + 1), entityID: change.entityID, payload: change.event.payload,
                        arrivalMs: arrivalMs)
                }
                if rows.isEmpty { break }
                bytes += rows.reduce(0) { $0 + $1.payload.utf8.count }
                try watch.measure { try table.insert(rows) }
            }
            try watch.measure { try table.finish() }
            let megabytes = Double(workspace.size(of: path)) / 1e6
            return result(
                events: Int(seq), payloadBytes: bytes, seconds: watch.seconds, cpuSeconds: watch.cpuSeconds,
                note: String(format: "db %.0f MB", megabytes))
        }
        outcome.isAnalysis = analysis
        return outcome
    }
}
