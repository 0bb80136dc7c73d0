import Foundation

/// A block row as read: its columns and text, each event decoded when
/// first asked for, so that a step of an entity's chain into the block
/// decodes one entry, not the block.
final class ReadBlock {
    let firstOffset: Int64
    let lastOffset: Int64
    private let firstSeq: UInt64
    private let arrivalMs: Int64
    private let feed: FeedID
    private let path: String
    private let text: [UInt8]
    /// Where each entry starts in `text`.
    private let starts: [Int]
    private var decoded: [(event: InsertedEvent, entityPrev: Int64?)?]

    /// Nil when `text` is not a JSON array of exactly the block's span of entries.
    init?(
        firstOffset: Int64, lastOffset: Int64, firstSeq: UInt64, arrivalMs: Int64, feed: FeedID, text: [UInt8],
        path: String
    ) {
        guard let starts = text.withUnsafeBufferPointer({ EventBlock.entryStarts(in: $0) }),
            Int64(starts.count) == lastOffset - firstOffset + 1
        else { return nil }
        self.firstOffset = firstOffset
        self.lastOffset = lastOffset
        self.firstSeq = firstSeq
        self.arrivalMs = arrivalMs
        self.feed = feed
        self.path = path
        self.text = text
        self.starts = starts
        decoded = Array(repeating: nil, count: starts.count)
    }

    /// The event at local offset `offset` and its `entity_prev`, if this block holds it.
    func event(at offset: Int64) throws -> (event: InsertedEvent, entityPrev: Int64?)? {
        guard offset >= firstOffset, offset <= lastOffset else { return nil }
        let index = Int(offset - firstOffset)
        if let known = decoded[index] { return known }
        let entry = text.withUnsafeBufferPointer { EventBlock.entry(in: $0, from: starts[index]) }
        if let entry { return remember(entry, at: index) }
        // Not in the fast reader's shape (an escaped string): parse the whole block once.
        guard let entries = EventBlock.entries(of: String(decoding: text, as: UTF8.self)),
            entries.count == starts.count
        else { throw EventLogError.corrupt(path: path, reason: "the block at offset \(firstOffset) cannot be read") }
        for (position, entry) in entries.enumerated() where decoded[position] == nil { remember(entry, at: position) }
        return decoded[index]
    }

    /// Every event of the block, in offset (and seq) order.
    func events() throws -> [InsertedEvent] {
        try (firstOffset...lastOffset).map { try event(at: $0)!.event }
    }

    @discardableResult
    private func remember(_ entry: EventBlock.Entry, at index: Int) -> (event: InsertedEvent, entityPrev: Int64?) {
        let event = Event(
            eventID: entry.eventID, feed: feed, seq: firstSeq + UInt64(index), timeMs: entry.timeMs,
            entityType: entry.entityType, entityID: entry.entityID, payload: entry.payload)
        let read = (
            event: InsertedEvent(
                stored: StoredEvent(event: event, offset: firstOffset + Int64(index), arrivalTimeMs: arrivalMs),
                entityRow: entry.entityRow, startsChain: entry.entityPrev == nil),
            entityPrev: entry.entityPrev
        )
        decoded[index] = read
        return read
    }
}

/// The blocks read last: paging through a block, or walking an entity's
/// chain through the blocks around it, reads and decodes each entry once.
struct ReadBlockCache {
    static let capacity = 64
    /// Most recently used last.
    private var blocks: [ReadBlock] = []

    func block(holding offset: Int64) -> ReadBlock? {
        blocks.last { $0.firstOffset <= offset && offset <= $0.lastOffset }
    }

    func block(firstOffset: Int64, lastOffset: Int64) -> ReadBlock? {
        blocks.last { $0.firstOffset == firstOffset && $0.lastOffset == lastOffset }
    }

    mutating func keep(_ block: ReadBlock) {
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

    /// The select list of a block row; see `forEachBlock(_:_:_:)`.
    private static let blockSelect = """
        SELECT b.first_offset, b.last_offset, b.first_seq, b.arrival_ms, b.events, f.replica_id, f.scope
        FROM event_blocks b JOIN feeds f ON f.id = b.feed
        """

    /// Inside a write transaction: the local offset the next stored event
    /// takes. Rows and blocks share the offsets, so a row's offset is
    /// given, not left to SQLite's rowid.
    func takeOffset() throws -> Int64 {
        if nextOffset == nil, options.sharedJournal == nil, !journalBypassed,
            let store = try EventLog.readMeta(db, "shared_store")
        {
            throw EventLogError.mirrorsSharedStore(path: path, store: store)
        }
        let offset = try nextOffset ?? max(newestOffset(), journalHead ?? 0) + 1
        nextOffset = offset + 1
        return offset
    }

    /// Inside a write transaction: where `event` goes: the slot a mirror
    /// pinned it to, else the next offset and `arrivalMs`.
    func takeSlot(for event: Event, arrivalMs: Int64) throws -> PinnedSlot {
        if let pinned = pinnedSlots?[FeedSlot(feed: event.feed, seq: event.seq)] {
            nextOffset = max(nextOffset ?? 0, pinned.offset + 1)
            return pinned
        }
        return PinnedSlot(offset: try takeOffset(), arrivalMs: arrivalMs)
    }

    /// Inside a transaction: the newest stored event's local offset, in a
    /// row or in a block; 0 when nothing is stored.
    func newestOffset() throws -> Int64 {
        let row = try db.scalarInt("SELECT max(local_offset) FROM events") ?? 0
        // Blocks never overlap: the last by first offset ends last (found by the rowid, no scan).
        let block = try db.scalarInt("SELECT last_offset FROM event_blocks ORDER BY first_offset DESC LIMIT 1") ?? 0
        // Offsets of dropped history, or the one a start from a checkpoint reserves, are never reused.
        return max(row, block, try historyOffset())
    }

    /// Inside a transaction: the number of stored events, rows and blocks.
    func storedEventCount() throws -> Int64 {
        let rows = try db.scalarInt("SELECT count(*) FROM events") ?? 0
        // Seqs, not offsets: the index holds them, so the count reads no block (a damaged one included).
        let blocks = try db.scalarInt("SELECT sum(last_seq - first_seq + 1) FROM event_blocks") ?? 0
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

    /// Calls `body` with each block a query built on `blockSelect` finds,
    /// in its order, until it returns false; rows past that are not read.
    private func forEachBlock(
        _ sqlTail: String, _ arguments: [SQLiteValue], _ body: (ReadBlock) throws -> Bool
    ) throws {
        let statement = try db.cached(EventLog.blockSelect + " " + sqlTail)
        try statement.bind(arguments)
        defer { statement.reset() }
        while try statement.step() {
            let firstOffset = statement.int64(0)
            let lastOffset = statement.int64(1)
            var block = keptBlocks.block(firstOffset: firstOffset, lastOffset: lastOffset)
            if block == nil {
                guard
                    let read = ReadBlock(
                        firstOffset: firstOffset, lastOffset: lastOffset, firstSeq: UInt64(statement.int64(2)),
                        arrivalMs: statement.int64(3),
                        feed: FeedID(replicaID: statement.text(5), scope: statement.text(6)),
                        text: statement.blob(4), path: path)
                else {
                    throw EventLogError.corrupt(path: path, reason: "the block at offset \(firstOffset) cannot be read")
                }
                keptBlocks.keep(read)
                block = read
            }
            guard try body(block!) else { return }
        }
    }

    /// Inside a transaction: the block holding local offset `offset`, if any.
    func block(holding offset: Int64) throws -> ReadBlock? {
        if let kept = keptBlocks.block(holding: offset) { return kept }
        var found: ReadBlock?
        try forEachBlock(
            "WHERE b.first_offset <= ? AND b.last_offset >= ? ORDER BY b.first_offset DESC LIMIT 1",
            [.int(offset), .int(offset)]
        ) {
            found = $0
            return false
        }
        return found
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
        // From the block holding `after + 1` on; the scan stops as soon as the page is full.
        try forEachBlock(
            """
            WHERE b.first_offset >= coalesce((SELECT max(first_offset) FROM event_blocks WHERE first_offset <= ?), 0)
              AND b.first_offset <= ? \(blockCondition)
            ORDER BY b.first_offset
            """, [.int(after + 1), .int(through)]
        ) { block in
            for event in try block.events() where event.stored.offset > after && event.stored.offset <= through {
                guard found.count < limit else { break }
                if keep(event) { found.append(event) }
            }
            return found.count < limit
        }
        return found
    }

    /// Inside a transaction: up to `limit` events of feed row `feedRow`
    /// stored in blocks with seq in `seqs`, in seq order.
    func blockEvents(feedRow: Int64, seqs: ClosedRange<Int64>, limit: Int) throws -> [InsertedEvent] {
        guard limit > 0 else { return [] }
        var found: [InsertedEvent] = []
        try forEachBlock(
            "WHERE b.feed = ? AND b.last_seq >= ? AND b.first_seq <= ? ORDER BY b.last_seq",
            [.int(feedRow), .int(seqs.lowerBound), .int(seqs.upperBound)]
        ) { block in
            for event in try block.events() where seqs.contains(Int64(event.stored.event.seq)) {
                guard found.count < limit else { break }
                found.append(event)
            }
            return found.count < limit
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
