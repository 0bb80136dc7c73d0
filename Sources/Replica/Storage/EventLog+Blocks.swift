import Foundation

/// A block row read and decoded: its events with their entity rows and
/// chain links, in seq (and offset) order.
struct DecodedBlock {
    var firstOffset: Int64
    var lastOffset: Int64
    var events: [InsertedEvent]
    /// Per event, `entity_prev`: the offset of its entity's previous event.
    var entityPrevs: [Int64?]

    /// The event at local offset `offset`, if this block holds it.
    func event(at offset: Int64) -> (event: InsertedEvent, entityPrev: Int64?)? {
        guard offset >= firstOffset, offset <= lastOffset else { return nil }
        let index = Int(offset - firstOffset)
        return (events[index], entityPrevs[index])
    }
}

/// The blocks read last, decoded: paging through a block, or walking an
/// entity's chain through the blocks around it, decodes each once.
struct DecodedBlockCache {
    static let capacity = 64
    /// Most recently used last.
    private var blocks: [DecodedBlock] = []

    func block(holding offset: Int64) -> DecodedBlock? {
        blocks.last { $0.firstOffset <= offset && offset <= $0.lastOffset }
    }

    func block(firstOffset: Int64, lastOffset: Int64) -> DecodedBlock? {
        blocks.last { $0.firstOffset == firstOffset && $0.lastOffset == lastOffset }
    }

    mutating func keep(_ block: DecodedBlock) {
        blocks.removeAll { $0.firstOffset == block.firstOffset }
        if blocks.count == Self.capacity { blocks.removeFirst() }
        blocks.append(block)
    }
}

/// Collects the events of one feed run that ingest stores as block rows.
struct BlockBuilder {
    let feedRow: Int64
    let arrivalMs: Int64
    private(set) var firstOffset: Int64 = 0
    private(set) var firstSeq: UInt64 = 0
    private(set) var entries: [EventBlock.Entry] = []

    init(feedRow: Int64, arrivalMs: Int64) {
        self.feedRow = feedRow
        self.arrivalMs = arrivalMs
    }

    mutating func append(_ event: Event, offset: Int64, entityRow: Int64, entityPrev: Int64?) {
        if entries.isEmpty {
            firstOffset = offset
            firstSeq = event.seq
        }
        entries.append(
            EventBlock.Entry(
                eventID: event.eventID, timeMs: event.timeMs, entityRow: entityRow, entityType: event.entityType,
                entityID: event.entityID, entityPrev: entityPrev, payload: event.payload))
    }

    var count: Int { entries.count }

    mutating func removeAll() { entries.removeAll(keepingCapacity: true) }
}

extension EventLog {
    /// A feed run of at least this many events in one ingest call is stored
    /// as block rows; a shorter one (a live push, say) as rows of `events`.
    static let blockMinimumEvents = 64
    /// A block holds at most this many events, so that reading one event
    /// of it (a step of an entity's chain, in a refold) decodes a short
    /// text, about 150 bytes an event (docs/storage.md "Block rows").
    static let blockMaximumEvents = 32

    /// The select list of a decoded block; see `decodedBlocks(_:_:)`.
    private static let blockSelect = """
        SELECT b.first_offset, b.last_offset, b.first_seq, b.arrival_ms, b.events, f.replica_id, f.scope
        FROM event_blocks b JOIN feeds f ON f.id = b.feed
        """

    /// Inside a write transaction: the local offset the next stored event
    /// takes. Rows and blocks share the offsets, so a row's offset is
    /// given, not left to SQLite's rowid.
    func takeOffset() throws -> Int64 {
        let offset = try nextOffset ?? newestOffset() + 1
        nextOffset = offset + 1
        return offset
    }

    /// Inside a transaction: the newest stored event's local offset, in a
    /// row or in a block; 0 when nothing is stored.
    func newestOffset() throws -> Int64 {
        let row = try db.scalarInt("SELECT max(local_offset) FROM events") ?? 0
        // Blocks never overlap: the last by first offset ends last (found by the rowid, no scan).
        let block = try db.scalarInt("SELECT last_offset FROM event_blocks ORDER BY first_offset DESC LIMIT 1") ?? 0
        return max(row, block)
    }

    /// Inside a transaction: the number of stored events, rows and blocks.
    func storedEventCount() throws -> Int64 {
        let rows = try db.scalarInt("SELECT count(*) FROM events") ?? 0
        let blocks = try db.scalarInt("SELECT sum(last_offset - first_offset + 1) FROM event_blocks") ?? 0
        return rows + blocks
    }

    /// Inside a write transaction: stores `block` as one row and empties it.
    func writeBlock(_ block: inout BlockBuilder) throws {
        guard block.count > 0 else { return }
        let insert = try db.statement(
            """
            INSERT INTO event_blocks (first_offset, last_offset, feed, first_seq, last_seq, arrival_ms, events)
            VALUES (?, ?, ?, ?, ?, ?, ?)
            """)
        try insert.bind(.int(block.firstOffset), at: 1)
        try insert.bind(.int(block.firstOffset + Int64(block.count) - 1), at: 2)
        try insert.bind(.int(block.feedRow), at: 3)
        try insert.bind(.int(Int64(block.firstSeq)), at: 4)
        try insert.bind(.int(Int64(block.firstSeq) + Int64(block.count) - 1), at: 5)
        try insert.bind(.int(block.arrivalMs), at: 6)
        try insert.bind(.text(EventBlock.text(of: block.entries)), at: 7)
        try insert.run()
        block.removeAll()
    }

    /// The blocks a query built on `blockSelect` finds, decoded, in its order.
    private func decodedBlocks(_ sqlTail: String, _ arguments: [SQLiteValue]) throws -> [DecodedBlock] {
        let statement = try db.cached(EventLog.blockSelect + " " + sqlTail)
        try statement.bind(arguments)
        defer { statement.reset() }
        var blocks: [DecodedBlock] = []
        while try statement.step() {
            let firstOffset = statement.int64(0)
            let lastOffset = statement.int64(1)
            if let kept = decodedBlocks.block(firstOffset: firstOffset, lastOffset: lastOffset) {
                blocks.append(kept)
                continue
            }
            let feed = FeedID(replicaID: statement.text(5), scope: statement.text(6))
            let block = try decode(
                firstOffset: firstOffset, lastOffset: lastOffset, firstSeq: UInt64(statement.int64(2)),
                arrivalMs: statement.int64(3), text: statement.text(4), feed: feed)
            decodedBlocks.keep(block)
            blocks.append(block)
        }
        return blocks
    }

    private func decode(
        firstOffset: Int64, lastOffset: Int64, firstSeq: UInt64, arrivalMs: Int64, text: String, feed: FeedID
    ) throws -> DecodedBlock {
        guard let entries = EventBlock.entries(of: text), Int64(entries.count) == lastOffset - firstOffset + 1 else {
            throw EventLogError.corrupt(path: path, reason: "the block at offset \(firstOffset) cannot be read")
        }
        var events: [InsertedEvent] = []
        events.reserveCapacity(entries.count)
        for (index, entry) in entries.enumerated() {
            let event = Event(
                eventID: entry.eventID, feed: feed, seq: firstSeq + UInt64(index), timeMs: entry.timeMs,
                entityType: entry.entityType, entityID: entry.entityID, payload: entry.payload)
            events.append(
                InsertedEvent(
                    stored: StoredEvent(event: event, offset: firstOffset + Int64(index), arrivalTimeMs: arrivalMs),
                    entityRow: entry.entityRow, startsChain: entry.entityPrev == nil))
        }
        return DecodedBlock(
            firstOffset: firstOffset, lastOffset: lastOffset, events: events, entityPrevs: entries.map(\.entityPrev))
    }

    /// Inside a transaction: the block holding local offset `offset`, if any.
    func block(holding offset: Int64) throws -> DecodedBlock? {
        if let kept = decodedBlocks.block(holding: offset) { return kept }
        return try decodedBlocks(
            "WHERE b.first_offset <= ? AND b.last_offset >= ? ORDER BY b.first_offset DESC LIMIT 1",
            [.int(offset), .int(offset)]
        ).first
    }

    /// Inside a transaction: up to `limit` events stored in blocks at
    /// offsets after `after` and up to `through`, in offset order, those
    /// `keep` accepts. Only blocks `blockCondition` (SQL on `b`) selects are read.
    func blockEvents(
        after: Int64, through: Int64, limit: Int, blockCondition: String = "",
        keep: (InsertedEvent) -> Bool = { _ in true }
    ) throws -> [InsertedEvent] {
        guard limit > 0 else { return [] }
        var found: [InsertedEvent] = []
        var from = after
        // A block at a time: the scan stops as soon as the page is full.
        while found.count < limit {
            guard
                let block = try decodedBlocks(
                    """
                    WHERE b.last_offset > ? AND b.first_offset <= ?
                      AND b.first_offset >= coalesce((SELECT max(first_offset) FROM event_blocks WHERE first_offset <= ?), 0)
                      \(blockCondition)
                    ORDER BY b.first_offset LIMIT 1
                    """, [.int(from), .int(through), .int(from + 1)]
                ).first
            else { break }
            for event in block.events where event.stored.offset > after && event.stored.offset <= through {
                guard found.count < limit else { break }
                if keep(event) { found.append(event) }
            }
            from = block.lastOffset
        }
        return found
    }

    /// Inside a transaction: up to `limit` events of feed row `feedRow`
    /// stored in blocks with seq in `seqs`, in seq order.
    func blockEvents(feedRow: Int64, seqs: ClosedRange<Int64>, limit: Int) throws -> [InsertedEvent] {
        guard limit > 0 else { return [] }
        var found: [InsertedEvent] = []
        var from = seqs.lowerBound
        while found.count < limit, from <= seqs.upperBound {
            guard
                let block = try decodedBlocks(
                    "WHERE b.feed = ? AND b.last_seq >= ? AND b.first_seq <= ? ORDER BY b.last_seq LIMIT 1",
                    [.int(feedRow), .int(from), .int(seqs.upperBound)]
                ).first
            else { break }
            for event in block.events {
                let seq = Int64(event.stored.event.seq)
                guard seq >= from, seq <= seqs.upperBound, found.count < limit else { continue }
                found.append(event)
            }
            from = Int64(block.events.last!.stored.event.seq) + 1
        }
        return found
    }

    /// Merges two lists each in ascending `key` order, keeping at most `limit`.
    static func merged(
        _ rows: [InsertedEvent], _ blocks: [InsertedEvent], limit: Int, by key: (InsertedEvent) -> Int64
    ) -> [InsertedEvent] {
        if blocks.isEmpty { return Array(rows.prefix(limit)) }
        if rows.isEmpty { return Array(blocks.prefix(limit)) }
        var result: [InsertedEvent] = []
        result.reserveCapacity(min(limit, rows.count + blocks.count))
        var row = 0
        var block = 0
        while result.count < limit, row < rows.count || block < blocks.count {
            if block == blocks.count || (row < rows.count && key(rows[row]) < key(blocks[block])) {
                result.append(rows[row])
                row += 1
            } else {
                result.append(blocks[block])
                block += 1
            }
        }
        return result
    }
}
