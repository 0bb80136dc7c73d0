import Foundation

/// A whole benchmark run: every size's throughput phases, then the latency
/// phase, then the report on standard output.
struct BenchmarkRun {
    /// The log sizes to measure; every size gets its own fresh databases.
    var eventCounts: [Int] = [200_000, 1_000_000]
    /// Where the databases go; nil means a fresh temporary directory, removed at the end.
    var directory: String?
    /// How many single-event commits the latency rows time (each side).
    var latencySamples = 2_000
    /// Events per transaction in every batched row.
    var batchSize = 1_000
    /// The most items a workload touches (fewer for small runs; see `ItemWorkload`).
    var maxItems = 20_000
    /// Only the two raw baselines and the ingest rows: a short run to profile ingest.
    var ingestOnly = false

    /// Runs everything and prints the Markdown report.
    func run() throws {
        let workspace = try Workspace(directory: directory)
        defer { workspace.finish() }
        progress("peerd-bench: work directory \(workspace.path)")
        let peakResets = ProcessMemory.resetPeak()
        var results: [PhaseResult] = []
        var growth: [MemoryCheckpoint] = []
        for size in eventCounts {
            let benchmark = SizeBenchmark(
                size: size, batchSize: batchSize, maxItems: maxItems, workspace: workspace)
            results += try ingestOnly ? benchmark.runIngest() : benchmark.run(growth: &growth)
        }
        let latency = try LatencyBenchmark(samples: latencySamples, workspace: workspace).run()
        let report = Report(
            results: results, growth: growth, latency: latency,
            meanPayloadBytes: meanPayloadBytes(), peakResets: peakResets)
        print(report.markdown)
    }

    /// The mean payload size of the workload, from its first 100,000 events.
    private func meanPayloadBytes() -> Double {
        var workload = ItemWorkload(eventCount: 100_000, maxItems: maxItems, distribution: .recentHot)
        var total = 0
        var count = 0
        while let change = workload.next() {
            total += change.event.payload.utf8.count
            count += 1
        }
        return Double(total) / Double(max(count, 1))
    }
}
