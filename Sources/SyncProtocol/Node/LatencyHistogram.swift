/// Durations in seconds counted into fixed buckets, the shape a Prometheus
/// histogram exports: per upper bound, how many values were at most that
/// bound (cumulative), with `+Inf` last, plus the count and the sum.
///
/// ```swift
/// var latency = LatencyHistogram()
/// latency.record(seconds: 0.004)
/// latency.record(seconds: 0.3)
/// latency.count                                              // 2
/// latency.buckets.first { $0.upperBound == 0.005 }?.count    // 1
/// latency.buckets.last!.count                                // 2 (le="+Inf")
/// ```
public struct LatencyHistogram: Sendable, Hashable {
    /// One line of the export: values at most `upperBound` seconds.
    public struct Bucket: Sendable, Hashable {
        /// Seconds; `.infinity` for the last bucket.
        public var upperBound: Double
        /// Values at most `upperBound`, cumulative over the smaller buckets.
        public var count: UInt64
    }

    /// 1 ms to 10 s, as Prometheus client libraries default to, plus `+Inf`.
    public static let defaultUpperBounds: [Double] = [
        0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
    ]

    /// The finite upper bounds in seconds, ascending; `+Inf` is implied.
    public let upperBounds: [Double]
    /// Per bucket (the finite ones, then `+Inf`): values that fell in it alone.
    private var perBucket: [UInt64]
    /// How many values were recorded.
    public private(set) var count: UInt64 = 0
    /// Their total in seconds.
    public private(set) var sum: Double = 0

    /// A histogram with these finite upper bounds (seconds, strictly ascending).
    public init(upperBounds: [Double] = LatencyHistogram.defaultUpperBounds) {
        precondition(
            zip(upperBounds, upperBounds.dropFirst()).allSatisfy { $0 < $1 } && upperBounds.allSatisfy(\.isFinite),
            "histogram bounds must be finite and strictly ascending: \(upperBounds)")
        self.upperBounds = upperBounds
        perBucket = Array(repeating: 0, count: upperBounds.count + 1)
    }

    /// Counts one duration. Negative and NaN values count as 0, values
    /// past the largest finite `Double` as that.
    public mutating func record(seconds: Double) {
        let value = seconds.isNaN ? 0 : min(max(0, seconds), Double.greatestFiniteMagnitude)
        let index = upperBounds.firstIndex { value <= $0 } ?? upperBounds.count
        perBucket[index] += 1
        count += 1
        sum += value
    }

    /// Adds every value `other` recorded; both must have the same bounds.
    public mutating func merge(_ other: LatencyHistogram) {
        precondition(other.upperBounds == upperBounds, "merging histograms with different bounds")
        for index in perBucket.indices { perBucket[index] += other.perBucket[index] }
        count += other.count
        sum += other.sum
    }

    /// Cumulative counts per upper bound, ending with `+Inf` (which equals `count`).
    public var buckets: [Bucket] {
        var running: UInt64 = 0
        return perBucket.enumerated().map { index, inBucket in
            running += inBucket
            return Bucket(upperBound: index < upperBounds.count ? upperBounds[index] : .infinity, count: running)
        }
    }
}
