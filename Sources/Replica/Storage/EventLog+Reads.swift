import Foundation

extension EventLog {
    /// What this replica holds and serves: the head of every feed but the
    /// forked ones (`forkProofs()`), whose events it keeps and no longer offers.
    public func cursor() throws -> VectorCursor {
        try read {
            let statement = try db.cached(
                """
                SELECT replica_id, scope, head_seq FROM feeds
                WHERE head_seq > 0 AND id NOT IN (SELECT feed FROM forked_feeds)
                """)
            var cursor = VectorCursor()
            while try statement.step() {
                cursor[FeedID(replicaID: statement.text(0), scope: statement.text(1))] = UInt64(statement.int64(2))
            }
            return cursor
        }
    }

    /// How many events this replica holds.
    public func eventCount() throws -> Int64 {
        try read { try storedEventCount() }
    }

    /// The local offset of the newest stored event (0 when there is none).
    public func lastOffset() throws -> Int64 {
        try read { try newestOffset() }
    }

    /// Up to `limit` events stored after local offset `offset`, in arrival order.
    /// Page on with the last returned event's offset.
    public func events(after offset: Int64, limit: Int) throws -> [StoredEvent] {
        try read { try storedEvents(after: offset, limit: limit).map(\.stored) }
    }

    /// Calls `body` with every stored event in arrival order, a page of at
    /// most `pageSize` at a time, so memory stays flat however large the log is.
    ///
    /// ```swift
    /// try log.forEachEventPage { page in for stored in page { print(EventJSON.line(for: stored)) } }
    /// ```
    public func forEachEventPage(pageSize: Int = 1000, _ body: ([StoredEvent]) throws -> Void) throws {
        var offset: Int64 = 0
        while true {
            let page = try events(after: offset, limit: pageSize)
            guard let last = page.last else { return }
            try body(page)
            offset = last.offset
        }
    }

    /// Every event of one entity, in canonical order.
    public func events(entityType: String, entityID: String) throws -> [StoredEvent] {
        try read {
            let tail = try syncPending()
            return try entityHistory(EntityKey(type: entityType, id: entityID), in: tail)
        }
    }

    /// One entity's events in canonical order, each with whether an undo
    /// cancelled it and whether its domain skipped it as poison.
    public func history(entityType: String, entityID: String) throws -> [HistoryEntry] {
        try read {
            let tail = try syncPending()
            let stored = try entityHistory(EntityKey(type: entityType, id: entityID), in: tail)
            let cancelled = Fold.cancelledEventIDs(inCanonicalOrder: stored.map(\.event))
            let pendingPoison = pending?.poisonOffsets ?? []
            let poison = try db.cached("SELECT 1 FROM poison WHERE local_offset = ?")
            return try stored.map { event in
                try poison.bind([.int(event.offset)])
                defer { poison.reset() }
                let skipped = try pendingPoison.contains(event.offset) || poison.step()
                return HistoryEntry(
                    stored: event, undone: cancelled.contains(event.event.eventID), poison: skipped)
            }
        }
    }

    /// The events of one feed with seq in `range`, in seq order.
    public func events(in feed: FeedID, seqs range: ClosedRange<UInt64>, limit: Int) throws -> [StoredEvent] {
        try read {
            guard let row = try feedRowID(feed, create: false) else { return [] }
            let seqs = Int64(min(range.lowerBound, UInt64(Int64.max)))...Int64(min(range.upperBound, UInt64(Int64.max)))
            let rows = try storedEventsWithEntity(
                "WHERE e.feed = ? AND e.seq BETWEEN ? AND ? ORDER BY e.seq LIMIT ?",
                [.int(row), .int(seqs.lowerBound), .int(seqs.upperBound), .int(Int64(limit))])
            // Past a full page of rows, no block event can be among the first `limit`.
            let blockSeqs = rows.count == limit ? seqs.lowerBound...Int64(rows.last!.stored.event.seq) : seqs
            let blocks = try blockEvents(feedRow: row, seqs: blockSeqs, limit: limit)
            return EventLog.merged(rows, blocks, limit: limit) { Int64($0.stored.event.seq) }.map(\.stored)
        }
    }

    /// The events a peer with cursor `peer` lacks, as bounded pages read one
    /// at a time, so memory stays flat however large the log is.
    ///
    /// ```swift
    /// var pages = try log.missingEventPages(for: theirCursor)
    /// while let page = try pages.next() { send(page) }
    /// ```
    public func missingEventPages(
        for peer: VectorCursor, maxEvents: Int = 1000, maxBytes: Int = 1 << 20
    ) throws -> MissingEventPages {
        let ranges = peer.missing(from: try cursor()).sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        return MissingEventPages(log: self, remaining: ranges, maxEvents: maxEvents, maxBytes: maxBytes)
    }

    /// The first events of `ranges` merged in canonical order across feeds:
    /// at most `maxEvents`, and about `maxBytes` of payload (always at least
    /// one event). Each feed stays in seq order, since a feed's times only
    /// grow; so a peer catching up from such pages applies events on top of
    /// its projections instead of refolding entities feed after feed.
    /// Declarations (scope `peersync/domains`) come before every other
    /// event, whatever their time: a peer then folds a declared type's
    /// events under the declaration as they arrive, instead of refolding
    /// every entity of the type when a declaration dated later arrives last.
    ///
    /// ```swift
    /// let page = try log.eventsInCanonicalOrder(of: [(feed, 5...900)], maxEvents: 5_000, maxBytes: 2 << 20)
    /// ```
    public func eventsInCanonicalOrder(
        of ranges: [(FeedID, ClosedRange<UInt64>)], maxEvents: Int, maxBytes: Int
    ) throws -> [Event] {
        // Each feed is read in chunks a little over its share of the page, and
        // read on when its chunk runs out, so few events are read for nothing.
        let chunk = max(64, maxEvents / max(ranges.count, 1) + 32)
        var queues = try ranges.map { try FeedQueue(log: self, feed: $0.0, seqs: $0.1, chunk: chunk) }
        var page: [Event] = []
        var bytes = 0
        while page.count < maxEvents {
            var best: Int?
            for index in queues.indices {
                guard let candidate = queues[index].next else { continue }
                if best.map({ Self.sendsBefore(candidate, queues[$0].next!) }) ?? true { best = index }
            }
            guard let chosen = best else { break }
            let event = queues[chosen].next!
            let size = event.payload.utf8.count + MissingEventPages.eventOverheadBytes
            if !page.isEmpty && bytes + size > maxBytes { break }
            page.append(event)
            bytes += size
            try queues[chosen].advance()
        }
        return page
    }

    /// The order of `eventsInCanonicalOrder`: declarations first, then canonical order.
    private static func sendsBefore(_ a: Event, _ b: Event) -> Bool {
        let (aDeclares, bDeclares) = (a.feed.scope == DeclarationEvent.scope, b.feed.scope == DeclarationEvent.scope)
        return aDeclares != bDeclares ? aDeclares : a.orderKey < b.orderKey
    }

    /// One feed's events in seq order, read a chunk at a time.
    private struct FeedQueue {
        let log: EventLog
        let feed: FeedID
        let upperBound: UInt64
        let chunk: Int
        var events: [Event] = []
        var position = 0
        /// The seq to read from when `events` runs out; nil once the range is read.
        var nextSeq: UInt64?

        init(log: EventLog, feed: FeedID, seqs: ClosedRange<UInt64>, chunk: Int) throws {
            self.log = log
            self.feed = feed
            self.upperBound = seqs.upperBound
            self.chunk = chunk
            nextSeq = seqs.lowerBound
            try refill()
        }

        /// The feed's next event not yet taken, if any.
        var next: Event? { position < events.count ? events[position] : nil }

        mutating func advance() throws {
            position += 1
            if position == events.count { try refill() }
        }

        private mutating func refill() throws {
            events = []
            position = 0
            guard let from = nextSeq else { return }
            events = try log.events(in: feed, seqs: from...upperBound, limit: chunk).map(\.event)
            let last = events.last?.seq ?? upperBound
            nextSeq = events.count < chunk || last >= upperBound ? nil : last + 1
        }
    }

    /// A number that changes whenever another connection (another process,
    /// such as an offline `peerd item` command) commits to the database;
    /// SQLite's `PRAGMA data_version`. Polling it is how a daemon notices
    /// local events it did not write itself.
    public func externalChangeCounter() throws -> Int64 {
        try EventLog.withWrappedErrors(path: path) { try db.scalarInt("PRAGMA data_version") ?? 0 }
    }

    /// The quarantined events (forks and invalid events), oldest first.
    public func quarantined() throws -> [QuarantinedEvent] {
        try read {
            let statement = try db.cached(
                """
                SELECT reason, replica_id, scope, seq, event_id, held_event_id, event_json, detected_ms
                FROM quarantine ORDER BY id
                """)
            var result: [QuarantinedEvent] = []
            while try statement.step() {
                result.append(
                    QuarantinedEvent(
                        reason: statement.text(0), feed: FeedID(replicaID: statement.text(1), scope: statement.text(2)),
                        seq: UInt64(statement.int64(3)), eventID: statement.text(4),
                        heldEventID: statement.isNull(5) ? nil : statement.text(5),
                        eventJSON: statement.text(6), detectedMs: statement.int64(7)))
            }
            return result
        }
    }

    /// How many forks have been found: distinct offered events at held
    /// slots, and feeds a fork proof quarantined.
    public func forkCount() throws -> Int64 {
        try read {
            try db.scalarInt(
                "SELECT (SELECT count(*) FROM quarantine WHERE reason = 'fork') + (SELECT count(*) FROM forked_feeds)")
                ?? 0
        }
    }

    /// How many stored events the fold skips because their payload does not decode.
    public func poisonEventCount() throws -> Int64 {
        try read {
            let pendingPoison = try syncedProjections().poisonOffsets
            let stored = try db.scalarInt("SELECT count(*) FROM poison") ?? 0
            guard !pendingPoison.isEmpty else { return stored }
            // Poison found in the tail whose rows are not written yet counts too, once.
            let statement = try db.statement("SELECT 1 FROM poison WHERE local_offset = ?")
            var unwritten: Int64 = 0
            for offset in pendingPoison {
                try statement.bind([.int(offset)])
                if try !statement.step() { unwritten += 1 }
                statement.reset()
            }
            return stored + unwritten
        }
    }
}

/// An event held aside: a fork of a held slot, or an event that breaks the model.
public struct QuarantinedEvent: Sendable, Hashable {
    public var reason: String
    public var feed: FeedID
    public var seq: UInt64
    public var eventID: String
    /// For a fork: the event this replica holds at that slot.
    public var heldEventID: String?
    /// The offered event in the documented JSON shape.
    public var eventJSON: String
    public var detectedMs: Int64
}

/// Pages of the events a peer lacks, per feed in seq order; see
/// `EventLog.missingEventPages(for:maxEvents:maxBytes:)`.
public struct MissingEventPages {
    private let log: EventLog
    private var remaining: [(FeedID, ClosedRange<UInt64>)]
    private let maxEvents: Int
    private let maxBytes: Int

    init(log: EventLog, remaining: [(FeedID, ClosedRange<UInt64>)], maxEvents: Int, maxBytes: Int) {
        self.log = log
        self.remaining = remaining
        self.maxEvents = max(1, maxEvents)
        self.maxBytes = max(1, maxBytes)
    }

    /// What an event costs in a page beyond its payload (ids, numbers,
    /// framing), as every page's `maxBytes` counts it.
    public static let eventOverheadBytes = 128

    /// The feeds and seq ranges still to send.
    public var pending: [(FeedID, ClosedRange<UInt64>)] { remaining }

    /// The next page: at most `maxEvents` events and about `maxBytes` of
    /// payload (always at least one event), or nil when nothing is left.
    public mutating func next() throws -> [Event]? {
        var page: [Event] = []
        var bytes = 0
        var full = false
        while !full, let (feed, range) = remaining.first {
            let batch = try log.events(in: feed, seqs: range, limit: maxEvents - page.count)
            var nextSeq = range.lowerBound
            for stored in batch {
                let size = stored.event.payload.utf8.count + MissingEventPages.eventOverheadBytes
                if !page.isEmpty && bytes + size > maxBytes {
                    full = true
                    break
                }
                page.append(stored.event)
                bytes += size
                nextSeq = stored.event.seq + 1
            }
            if page.count >= maxEvents { full = true }
            if batch.isEmpty || nextSeq > range.upperBound {
                remaining.removeFirst()
            } else {
                remaining[0] = (feed, nextSeq...range.upperBound)
            }
        }
        return page.isEmpty ? nil : page
    }
}

/// One event of an entity's history (`EventLog.history(entityType:entityID:)`).
public struct HistoryEntry: Sendable {
    public var stored: StoredEvent
    /// An `Undone` event cancelled it.
    public var undone: Bool
    /// Its domain could not apply it (docs/events.md "Poison events").
    public var poison: Bool
}
