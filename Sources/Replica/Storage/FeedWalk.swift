/// One feed's stored events in seq order, as `EventLog.checkIntegrity`
/// walks them: a feed must hold seqs 1…n without a gap, at increasing
/// local offsets, with `head_seq` = n.
struct FeedWalk {
    typealias Finding = IntegrityReport.Finding

    let feed: FeedID
    /// The seq that continues the gap-free prefix.
    private var expected: Int64 = 1
    private var lastSeq: Int64 = 0
    private var lastOffset: Int64 = 0
    private(set) var findings: [Finding] = []
    /// Findings past `limit` per kind, only counted.
    private var unreported: [Finding.Kind: Int] = [:]
    private let limit: Int

    /// `start`: the seq the feed's held events follow (a checkpoint's, on
    /// a log that started from it and holds none below).
    init(feed: FeedID, after start: Int64 = 0, limit: Int = 10) {
        self.feed = feed
        self.limit = limit
        expected = start + 1
        lastSeq = start
    }

    /// The next stored event of the feed, in seq order.
    mutating func take(seq: Int64, offset: Int64) {
        if seq < 1 {
            add(.init(.gap, "feed \(feed): seq \(seq) is stored at offset \(offset); seqs start at 1", feed: feed))
        } else if seq > expected {
            let missing = seq == expected + 1 ? "seq \(expected) is missing" : "seqs \(expected)…\(seq - 1) are missing"
            let context = expected == 1 ? "the feed starts at seq \(seq)" : "it holds seq \(expected - 1), then \(seq)"
            add(.init(.gap, "feed \(feed): \(missing) (\(context))", feed: feed, seq: UInt64(expected)))
        }
        if offset <= lastOffset {
            add(
                .init(
                    .offsetOrder,
                    "feed \(feed): seq \(seq) is at offset \(offset), not after seq \(lastSeq) at offset \(lastOffset)",
                    feed: feed, seq: UInt64(max(seq, 0))))
        }
        expected = max(expected, seq + 1)
        lastSeq = seq
        lastOffset = offset
    }

    /// The findings once the feed's last event was taken; `head` is its
    /// `head_seq` (nil when the feed has no row in `feeds`).
    func finished(head: Int64?) -> [Finding] {
        var all = findings
        for (kind, count) in unreported.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
            all.append(.init(kind, "feed \(feed): \(count) more \(kind.rawValue) findings like the above", feed: feed))
        }
        if let head, head != lastSeq {
            let held = lastSeq == 0 ? "no event is stored" : "the newest stored event is seq \(lastSeq)"
            all.append(
                .init(.head, "feed \(feed): head_seq is \(head), but \(held)", feed: feed, seq: UInt64(max(head, 0))))
        }
        return all
    }

    private mutating func add(_ finding: Finding) {
        if findings.filter({ $0.kind == finding.kind }).count < limit {
            findings.append(finding)
        } else {
            unreported[finding.kind, default: 0] += 1
        }
    }
}
