/// What a replica holds: for every feed it knows, the highest `seq` of its
/// gap-free prefix. Comparing two cursors tells exactly what one side lacks.
///
/// ```swift
/// var mine = VectorCursor()
/// mine[FeedID(replicaID: "a")] = 5
/// let theirs: VectorCursor = [FeedID(replicaID: "a"): 3]
/// theirs.missing(from: mine)  // [a/default: 4...5]
/// ```
public struct VectorCursor: Hashable, Sendable, ExpressibleByDictionaryLiteral {
    /// Highest contiguous `seq` held, per feed. Absent means 0.
    public private(set) var heads: [FeedID: UInt64]

    public init(heads: [FeedID: UInt64] = [:]) {
        self.heads = heads.filter { $0.value > 0 }
    }

    public init(dictionaryLiteral elements: (FeedID, UInt64)...) {
        self.init(heads: Dictionary(elements, uniquingKeysWith: max))
    }

    public subscript(feed: FeedID) -> UInt64 {
        get { heads[feed] ?? 0 }
        set { heads[feed] = newValue == 0 ? nil : newValue }
    }

    /// Feeds in a stable order.
    public var feeds: [FeedID] { heads.keys.sorted() }

    /// Total number of events the cursor covers.
    public var eventCount: UInt64 { heads.values.reduce(0, +) }

    /// The `seq` ranges that `other` holds and this cursor does not.
    public func missing(from other: VectorCursor) -> [FeedID: ClosedRange<UInt64>] {
        var result: [FeedID: ClosedRange<UInt64>] = [:]
        for (feed, theirs) in other.heads where theirs > self[feed] {
            result[feed] = (self[feed] + 1)...theirs
        }
        return result
    }

    /// How many events `other` holds that this cursor lacks.
    public func missingCount(from other: VectorCursor) -> UInt64 {
        missing(from: other).values.reduce(0) { total, range in
            let (sum, overflow) = total.addingReportingOverflow(range.upperBound - range.lowerBound + 1)
            return overflow ? UInt64.max : sum
        }
    }
}
