import Replica

/// The newest events of each feed this node committed or stored, kept so
/// that a live push reads them from memory instead of from the log: a read
/// that asks for a run of one feed that is held here is answered at once.
///
/// Events never change once stored, so an answer from here is the page the
/// log would give. Each feed keeps one run of consecutive seqs (a gap starts
/// a new run), at most `eventsPerFeed` of them, for at most `feeds` feeds
/// (the feed written longest ago goes first).
///
/// ```swift
/// var recent = RecentEvents()
/// recent.remember(committed)
/// if let page = recent.page(for: ranges, maxEvents: 512, maxBytes: 1 << 20) { ... }
/// ```
struct RecentEvents: Sendable {
    static let eventsPerFeed = 32
    static let feeds = 32

    /// Per feed: consecutive events, oldest first.
    private var runs: [FeedID: [Event]] = [:]
    /// Feeds by their last write, oldest first.
    private var order: [FeedID] = []

    /// Keeps `events` (any feeds, each feed's in seq order).
    mutating func remember<S: Sequence<Event>>(_ events: S) {
        for event in events {
            if runs[event.feed] == nil {
                order.append(event.feed)
                if order.count > Self.feeds { runs[order.removeFirst()] = nil }
            } else if order.last != event.feed, let index = order.firstIndex(of: event.feed) {
                order.append(order.remove(at: index))
            }
            Self.extend(&runs[event.feed, default: []], with: event)
        }
    }

    private static func extend(_ run: inout [Event], with event: Event) {
        if let last = run.last {
            guard event.seq > last.seq else { return }  // older than the run: not a live event
            if event.seq != last.seq + 1 { run.removeAll(keepingCapacity: true) }
        }
        run.append(event)
        if run.count > eventsPerFeed { run.removeFirst(run.count - eventsPerFeed) }
    }

    /// The page `EventLog.eventsInCanonicalOrder` would read for `ranges`,
    /// when they are one feed's run held here and the page is all of it;
    /// nil otherwise (the log is read).
    func page(for ranges: [FeedRange], maxEvents: Int, maxBytes: Int) -> [Event]? {
        guard ranges.count == 1, let range = ranges.first, let run = runs[range.feed], let first = run.first,
            range.seqs.lowerBound >= first.seq, range.seqs.upperBound <= run.last!.seq,
            range.seqs.count <= maxEvents
        else { return nil }
        let start = Int(range.seqs.lowerBound - first.seq)
        let page = Array(run[start..<(start + Int(range.seqs.count))])
        let bytes = page.reduce(0) { $0 + $1.payload.utf8.count + MissingEventPages.eventOverheadBytes }
        return page.count == 1 || bytes <= maxBytes ? page : nil
    }
}
