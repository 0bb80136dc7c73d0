/// What a benchmark run measures, read from the command line.
struct BenchOptions {
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

}
