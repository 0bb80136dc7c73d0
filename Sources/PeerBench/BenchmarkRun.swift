import Foundation

/// A whole benchmark run: every size's throughput phases, then the latency
/// phase, then the report on standard output.
struct BenchmarkRun {
    /// What to measure.
    let options: BenchOptions

    /// Runs everything and prints the Markdown report.
    func run() throws {
        let workspace = try Workspace(directory: options.directory)
        defer { workspace.finish() }
        progress("peerd-bench: work directory \(workspace.path)")
        let peakResets = ProcessMemory.resetPeak()
        var results: [PhaseResult] = []
        var growth: [MemoryCheckpoint] = []
        for size in options.eventCounts {
            let benchmark = SizeBenchmark(
                size: size, batchSize: options.batchSize, maxItems: options.maxItems, workspace: workspace)
            results += try options.ingestOnly ? benchmark.runIngest() : benchmark.run(growth: &growth)
        }
        let latency = try LatencyBenchmark(samples: options.latencySamples, workspace: workspace).run()
        let report = Report(
            results: results, growth: growth, latency: latency,
            meanPayloadBytes: meanPayloadBytes(), peakResets: peakResets)
        print(report.markdown)
    }

    /// The mean payload size of the workload, from its first 100,000 events.
    private func meanPayloadBytes() -> Double {
        var workload = ItemWorkload(eventCount: 100_000, maxItems: options.maxItems, distribution: .recentHot)
        var total = 0
        var count = 0
        while let change = workload.next() {
            total += change.event.payload.utf8.count
            count += 1
        }
        return Double(total) / Double(max(count, 1))
    }
}
