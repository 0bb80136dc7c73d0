import SyncProtocol
import Testing

@Suite struct LatencyHistogramTests {
    @Test func aValueCountsInTheFirstBucketItFitsAndEveryLargerOne() {
        var histogram = LatencyHistogram()
        histogram.record(seconds: 0.004)
        histogram.record(seconds: 0.005)
        histogram.record(seconds: 0.3)
        let counts = Dictionary(uniqueKeysWithValues: histogram.buckets.map { ($0.upperBound, $0.count) })
        #expect(counts[0.0025] == 0)
        #expect(counts[0.005] == 2, "a value equal to a bound is in that bucket (le)")
        #expect(counts[0.25] == 2)
        #expect(counts[0.5] == 3)
        #expect(counts[.infinity] == 3)
        #expect(histogram.count == 3)
        #expect(abs(histogram.sum - 0.309) < 1e-12)
    }

    @Test func theDefaultBoundsEndWithInfinity() {
        let bounds = LatencyHistogram().buckets.map(\.upperBound)
        #expect(bounds == LatencyHistogram.defaultUpperBounds + [.infinity])
        #expect(bounds.first == 0.001 && bounds.dropLast().last == 10)
    }

    @Test func valuesPastTheLastBoundCountOnlyInInfinity() {
        var histogram = LatencyHistogram(upperBounds: [1, 2])
        histogram.record(seconds: 60)
        #expect(histogram.buckets.map(\.count) == [0, 0, 1])
    }

    @Test func negativeAndNaNValuesCountAsZero() {
        var histogram = LatencyHistogram(upperBounds: [1])
        histogram.record(seconds: -3)
        histogram.record(seconds: .nan)
        #expect(histogram.buckets.map(\.count) == [2, 2])
        #expect(histogram.sum == 0)
    }

    @Test func mergingAddsCountsSumsAndBuckets() {
        var first = LatencyHistogram(upperBounds: [1, 2])
        var second = LatencyHistogram(upperBounds: [1, 2])
        first.record(seconds: 0.5)
        second.record(seconds: 1.5)
        second.record(seconds: 3)
        first.merge(second)
        #expect(first.buckets.map(\.count) == [1, 2, 3])
        #expect(first.count == 3 && first.sum == 5)
    }
}
