import Foundation

/// Every throughput phase for one log size: each phase writes `size` events
/// into a fresh database (the raw baselines first), times only the write
/// calls, and records its memory.
struct SizeBenchmark {
    /// Events per phase.
    let size: Int
    /// Events per transaction.
    let batchSize: Int
    /// The most items a workload touches.
    let maxItems: Int
    /// Where the databases go.
    let workspace: Workspace

    /// Runs every phase; appends RSS samples of the growing log to `growth`.
    func run(growth: inout [MemoryCheckpoint]) throws -> [PhaseResult] {
        var results: [PhaseResult] = []
        results.append(try rawInsertRate(.primaryKeyOnly))
        results.append(try rawInsertRate(.sameIndexes))
        results.append(try rawInsertRate(.sameIndexes, batch: batchSize * 10))
        results.append(try rawInsertRate(.feedSeqIndexOnly))
        results.append(try rawInsertRate(.eventLogStatements))
        results.append(try rawInsertRate(.eventLogStatements, batch: batchSize * 10))
        results.append(try appendRate(.recentHot, growth: &growth))
        results.append(try appendRate(.uniform, growth: &growth))

        let source = workspace.freshDatabase("ingest-\(size).db")
        defer { workspace.remove(source) }
        results.append(try ingestRate(into: source))
        results.append(try ingestRate(folding: false))
        results.append(try ingestRate(batch: batchSize * 10))
        results.append(try catchUpRate(from: source))
        results.append(try streamRate(from: source))
        results.append(try checkpointStartRate(from: source))
        return results
    }

    /// Only the raw baselines (with the SQL floor of `EventLog`'s own
    /// statements) and the ingest rows, for profiling `EventLog.ingest`.
    func runIngest() throws -> [PhaseResult] {
        var results = [
            try rawInsertRate(.primaryKeyOnly), try rawInsertRate(.sameIndexes),
            try rawInsertRate(.feedSeqIndexOnly), try rawInsertRate(.eventLogStatements),
            try rawInsertRate(.eventLogStatements, batch: batchSize * 10),
        ]
        let source = workspace.freshDatabase("ingest-\(size).db")
        defer { workspace.remove(source) }
        results.append(try ingestRate(into: source))
        results.append(try ingestRate(batch: batchSize * 10))
        results.append(try catchUpRate(from: source))
        return results
    }

    /// `1,000`: the batch size as the row names print it.
    var batchText: String { Report.grouped(Double(batchSize)) }

    /// A fresh workload of `size` events.
    func workload(_ distribution: EntityDistribution) -> ItemWorkload {
        ItemWorkload(eventCount: size, maxItems: maxItems, distribution: distribution)
    }

    /// Runs a phase with the peak RSS reset first, and fills in its memory figures.
    func phase(_ name: String, _ body: () throws -> PhaseResult) rethrows -> PhaseResult {
        progress("[\(size)] \(name) ...")
        ProcessMemory.resetPeak()
        let writtenBefore = ProcessIO.writtenBytes
        var result = try body()
        if let writtenBefore, let writtenAfter = ProcessIO.writtenBytes {
            result.diskWrittenBytes = writtenAfter - writtenBefore
        }
        result.name = name
        result.peakMiB = ProcessMemory.peakMiB
        result.endMiB = ProcessMemory.residentMiB
        progress(
            "[\(size)] \(name): \(Int(result.eventsPerSecond)) events/s in \(String(format: "%.1f", result.seconds)) s")
        return result
    }

    /// A blank result for `phase` to complete.
    func result(events: Int, payloadBytes: Int, seconds: Double, cpuSeconds: Double, note: String = "")
        -> PhaseResult
    {
        PhaseResult(
            name: "", size: size, events: events, payloadBytes: payloadBytes, seconds: seconds,
            cpuSeconds: cpuSeconds, peakMiB: 0, endMiB: 0, note: note)
    }

    /// The wall clock in milliseconds since 1970 (for time columns, never for timing).
    static func wallClockMs() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }
}
