import Replica

/// The newest events of each feed this node committed or stored, kept so
/// that a live push reads them from memory instead of from the log: a read
/// that asks for a run of one feed that is held here is answered at once.
///
/// Events never change once stored, so an answer from here is the page the
/// log would give. Each feed keeps one run of consecutive seqs (a gap starts
/// a new run), at most `eventsPerFeed` of them, for at most `feeds` feeds
/// (the feed written longest ago goes first). A relay pushing 1,000 events
/// a second to 1,000 replicas sends each a batch of every event of the last
/// 25 ms or more; a run long enough for a replica a second behind keeps
/// those batches out of the log, which would otherwise read the same pages
/// once per replica.
///
/// ```swift
/// var recent = RecentEvents()
/// recent.remember(committed)
/// if let page = recent.page(for: ranges, maxEvents: 512, maxBytes: 1 << 20) { ... }
/// ```
struct RecentEvents: Sendable {
    static let eventsPerFeed = 1_024
    /// A batch stored from a peer is kept when it is no larger than a live
    /// push, not when it is a page of a catch-up.
    static let liveBatchEvents = SyncSession.Configuration().liveBatchEvents
    static let feeds = 32

    /// Per feed: consecutive events, oldest first.
    private var runs: [FeedID: [Event]] = [:]
    /// Per feed: the signed heads within (or just before) its run, by seq.
    private var signed: [FeedID: [UInt64: SignedHead]] = [:]
    /// Feeds by their last write, oldest first.
    private var order: [FeedID] = []

    /// Keeps `events` (any feeds, each feed's in seq order) and the heads
    /// signed with them.
    mutating func remember<S: Sequence<Event>>(_ events: S, signed heads: [SignedHead] = []) {
        for event in events {
            if runs[event.feed] == nil {
                order.append(event.feed)
                if order.count > Self.feeds {
                    let oldest = order.removeFirst()
                    runs[oldest] = nil
                    signed[oldest] = nil
                }
            } else if order.last != event.feed, let index = order.firstIndex(of: event.feed) {
                order.append(order.remove(at: index))
            }
            Self.extend(&runs[event.feed, default: []], with: event)
        }
        for head in heads where runs[head.feed] != nil {
            signed[head.feed, default: [:]][head.seq] = head
            let oldest = runs[head.feed]!.first!.seq
            signed[head.feed]!.keys.filter { $0 + 1 < oldest }.forEach { signed[head.feed]![$0] = nil }
        }
    }

    private static func extend(_ run: inout [Event], with event: Event) {
        if let last = run.last {
            guard event.seq > last.seq else { return }  // older than the run: not a live event
            if event.seq != last.seq + 1 { run.removeAll(keepingCapacity: true) }
        }
        run.append(event)
        // Trimmed a quarter at a time, not one event per append.
        if run.count > eventsPerFeed + eventsPerFeed / 4 { run.removeFirst(run.count - eventsPerFeed) }
    }

    /// The page `EventLog.eventsInCanonicalOrder` would read for `ranges`,
    /// when they are one feed's run held here and the page is all of it;
    /// nil otherwise (the log is read). When `proven`, with its proof, cut
    /// back to the last signed head held: nil without one, or without the
    /// link before the page.
    func page(for ranges: [FeedRange], maxEvents: Int, maxBytes: Int, proven: Bool) -> EventPage? {
        guard let events = events(for: ranges, maxEvents: maxEvents, maxBytes: maxBytes) else { return nil }
        guard proven else { return EventPage(events: events) }
        let feed = events[0].feed
        let first = events[0].seq
        let base = first == 1 ? FeedChain.genesis : signed[feed]?[first - 1]?.link
        guard let base, let head = events.reversed().lazy.compactMap({ self.signed[feed]?[$0.seq] }).first else {
            return nil
        }
        return EventPage(
            events: Array(events.prefix(Int(head.seq - first + 1))),
            proofs: [feed: FeedProof(baseLink: base, head: head)])
    }

    private func events(for ranges: [FeedRange], maxEvents: Int, maxBytes: Int) -> [Event]? {
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
