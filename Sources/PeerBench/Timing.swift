#if canImport(Glibc)
    import Glibc
#endif

/// Elapsed time summed over many separate timed calls, read from the
/// monotonic `ContinuousClock`, so that building inputs between the calls is
/// not counted; also the CPU time the process spent in them.
struct Stopwatch {
    private let clock = ContinuousClock()
    /// The total time spent inside `measure`.
    private(set) var elapsed: Duration = .zero
    /// The process CPU time (user + system, `CLOCK_PROCESS_CPUTIME_ID`)
    /// spent inside `measure`, in seconds.
    private(set) var cpuSeconds: Double = 0

    /// Runs `body` and adds its duration to `elapsed`.
    @discardableResult
    mutating func measure<T>(_ body: () throws -> T) rethrows -> T {
        let cpuStart = Stopwatch.processCPUSeconds()
        let start = clock.now
        defer {
            elapsed += clock.now - start
            cpuSeconds += Stopwatch.processCPUSeconds() - cpuStart
        }
        return try body()
    }

    /// CPU time this process has used so far, in seconds.
    static func processCPUSeconds() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) * 1e-9
    }

    /// Times one call of `body` on its own.
    static func time(_ body: () throws -> Void) rethrows -> Duration {
        var watch = Stopwatch()
        try watch.measure(body)
        return watch.elapsed
    }

    /// `elapsed` in seconds.
    var seconds: Double { elapsed.seconds }
}

extension Duration {
    /// The duration in seconds, as a floating-point number.
    var seconds: Double {
        let parts = components
        return Double(parts.seconds) + Double(parts.attoseconds) * 1e-18
    }
}

/// Summary figures of a set of latency samples.
struct LatencySummary {
    /// How many samples there were.
    var count: Int
    /// Median, in seconds.
    var p50: Double
    /// 99th percentile, in seconds.
    var p99: Double
    /// The slowest sample, in seconds.
    var max: Double
    /// Samples per second of summed sample time.
    var ratePerSecond: Double

    /// Summarises samples; the percentiles are nearest-rank.
    init(_ samples: [Duration]) {
        let sorted = samples.map(\.seconds).sorted()
        count = sorted.count
        p50 = LatencySummary.percentile(0.50, of: sorted)
        p99 = LatencySummary.percentile(0.99, of: sorted)
        max = sorted.last ?? 0
        let total = sorted.reduce(0, +)
        ratePerSecond = total > 0 ? Double(sorted.count) / total : 0
    }

    /// The nearest-rank percentile of sorted values (0 when empty).
    static func percentile(_ fraction: Double, of sorted: [Double]) -> Double {
        guard !sorted.isEmpty else { return 0 }
        let rank = Int((fraction * Double(sorted.count)).rounded(.up))
        return sorted[Swift.min(Swift.max(rank, 1), sorted.count) - 1]
    }
}
