import Foundation

extension EventLog {
    /// The select list and joins that read a `StoredEvent`; see `storedEvent(from:)`.
    static let storedEventSelect = """
        SELECT e.local_offset, e.event_id, f.replica_id, f.scope, e.seq, e.time_ms,
               n.entity_type, n.entity_id, e.payload, e.arrival_ms, e.entity, e.entity_prev IS NULL
        FROM events e JOIN feeds f ON f.id = e.feed JOIN entities n ON n.id = e.entity
        """

    /// One entity's events stored as rows, newest first, by walking
    /// `entity_prev` from the event at offset `?` (the chain replaces an
    /// index on `entity`); the walk stops at a link into a block.
    static let entityChainSelect = """
        WITH RECURSIVE chain(offset) AS (
            SELECT ?
            UNION ALL
            SELECT e.entity_prev FROM chain c JOIN events e ON e.local_offset = c.offset
            WHERE e.entity_prev IS NOT NULL)
        SELECT e.local_offset, e.event_id, f.replica_id, f.scope, e.seq, e.time_ms,
               n.entity_type, n.entity_id, e.payload, e.arrival_ms, e.entity, e.entity_prev IS NULL, e.entity_prev
        FROM chain c CROSS JOIN events e ON e.local_offset = c.offset
             JOIN feeds f ON f.id = e.feed JOIN entities n ON n.id = e.entity
        """

    /// Decodes the current row of a statement built on `storedEventSelect`.
    func storedEvent(from row: SQLiteStatement) throws -> StoredEvent {
        guard let eventID = UUID(bytes: row.blob(1)) else {
            throw EventLogError.corrupt(path: path, reason: "event at offset \(row.int64(0)) has a malformed event_id")
        }
        let event = Event(
            eventID: eventID,
            feed: FeedID(replicaID: row.text(2), scope: row.text(3)),
            seq: UInt64(row.int64(4)),
            timeMs: row.int64(5),
            entityType: row.text(6),
            entityID: row.text(7),
            payload: row.text(8))
        return StoredEvent(event: event, offset: row.int64(0), arrivalTimeMs: row.int64(9))
    }

    /// Runs a query built on `storedEventSelect` and collects its rows.
    func storedEvents(_ sqlTail: String, _ arguments: [SQLiteValue]) throws -> [StoredEvent] {
        try storedEventsWithEntity(sqlTail, arguments).map(\.stored)
    }

    /// As `storedEvents`, each event with its entity row.
    func storedEventsWithEntity(
        _ sqlTail: String, _ arguments: [SQLiteValue], select: String = EventLog.storedEventSelect
    ) throws -> [InsertedEvent] {
        let statement = try db.cached(select + " " + sqlTail)
        try statement.bind(arguments)
        var events: [InsertedEvent] = []
        while try statement.step() {
            events.append(
                InsertedEvent(
                    stored: try storedEvent(from: statement), entityRow: statement.int64(10),
                    startsChain: statement.int64(11) != 0))
        }
        return events
    }

    /// Inside a transaction: up to `limit` events stored after offset
    /// `after` and up to `through`, rows and blocks, in offset order.
    /// `rowCondition` (SQL on `e`, `f`, `n`, beginning with `AND`) filters
    /// the rows, `blockCondition` (SQL on `b`) the blocks read and `keep`
    /// their events, so that the three must agree.
    func storedEvents(
        after: Int64, through: Int64 = Int64.max, limit: Int, rowCondition: String = "",
        rowArguments: [SQLiteValue] = [], blockCondition: String = "", keep: (InsertedEvent) -> Bool = { _ in true }
    ) throws -> [InsertedEvent] {
        let rows = try storedEventsWithEntity(
            "WHERE e.local_offset > ? AND e.local_offset <= ? \(rowCondition) ORDER BY e.local_offset LIMIT ?",
            [.int(after), .int(through)] + rowArguments + [.int(Int64(limit))])
        // Past a full page of rows, no block event can be among the first `limit`.
        let blockBound = rows.count == limit ? rows.last!.stored.offset : through
        let blocks = try blockEvents(
            after: after, through: blockBound, limit: limit, blockCondition: blockCondition, keep: keep)
        return EventLog.merged(rows, blocks, limit: limit) { $0.stored.offset }
    }

    /// Inside a transaction: the event stored at local offset `offset`, in a row or a block.
    func storedEvent(at offset: Int64) throws -> InsertedEvent? {
        if let row = try storedEventsWithEntity("WHERE e.local_offset = ?", [.int(offset)]).first { return row }
        return try block(holding: offset)?.event(at: offset)?.event
    }

    /// Every event of one entity up to its event at offset `head` that the
    /// checkpoint the fold starts from does not cover, in canonical order.
    func entityHistory(head: Int64) throws -> [StoredEvent] {
        var chain = try entityChain(head: head).map(\.stored)
        // What the checkpoint covers is folded into the entity's base.
        if !covered.id.isEmpty { chain.removeAll { covered.covers($0.event) } }
        return chain.sorted { $0.event.orderKey < $1.event.orderKey }
    }

    /// One entity's events, newest first, from its event at offset `head`
    /// along `entity_prev` through rows and blocks alike. A link that does
    /// not point back, or points to no stored event, ends the walk (the
    /// integrity check reports both).
    func entityChain(head: Int64) throws -> [InsertedEvent] {
        var chain: [InsertedEvent] = []
        var next: Int64? = head
        while let offset = next {
            let statement = try db.cached(EventLog.entityChainSelect)
            try statement.bind([.int(offset)])
            var readRows = false
            var link: Int64?
            while try statement.step() {
                chain.append(
                    InsertedEvent(
                        stored: try storedEvent(from: statement), entityRow: statement.int64(10),
                        startsChain: statement.int64(11) != 0))
                link = statement.isNull(12) ? nil : statement.int64(12)
                readRows = true
            }
            if readRows {
                // The rows ended at a link into a block, or at the chain's start.
                next = link.flatMap { $0 < chain.last!.stored.offset ? $0 : nil }
                continue
            }
            guard let block = try block(holding: offset) else { break }
            var inBlock: Int64? = offset
            next = nil
            while let current = inBlock, let (event, previous) = try block.event(at: current) {
                chain.append(event)
                guard let previous, previous < current else {
                    inBlock = nil
                    break
                }
                inBlock = previous
            }
            if let outside = inBlock { next = outside }
        }
        return chain
    }

    /// Inside a write transaction: the arrival time of the events it stores,
    /// the wall clock but never before the newest stored arrival, so that
    /// arrival times (a relay's server times, docs/relay.md) follow local
    /// offsets even after the clock was set back.
    func arrivalTime(wallMs: Int64) throws -> Int64 {
        let row = try db.cached("SELECT local_offset, arrival_ms FROM events ORDER BY local_offset DESC LIMIT 1")
        defer { row.reset() }
        let block = try db.cached("SELECT last_offset, arrival_ms FROM event_blocks ORDER BY first_offset DESC LIMIT 1")
        defer { block.reset() }
        var newest: (offset: Int64, arrivalMs: Int64)?
        if try row.step() { newest = (row.int64(0), row.int64(1)) }
        if try block.step(), block.int64(0) > newest?.offset ?? 0 { newest = (block.int64(0), block.int64(1)) }
        return max(wallMs, newest?.arrivalMs ?? wallMs)
    }

    /// Inside a write transaction, after `syncPending()` (`tail`): stores one event,
    /// chained to its entity's previous event, into `block` when given
    /// (which the caller writes), else as a row of `events` (in a
    /// thin-client feed, indexed by its id).
    func storeEvent(
        _ event: Event, feedRow: Int64, entityRow: Int64, arrivalMs: Int64, into block: inout BlockBuilder?,
        in tail: SyncedTail
    ) throws -> InsertedEvent {
        let previous = try chainHead(entityRow: entityRow, in: tail)
        let slot = try takeSlot(for: event, arrivalMs: arrivalMs)
        let (offset, arrivalMs) = (slot.offset, slot.arrivalMs)
        if block != nil {
            block!.append(event, offset: offset, entityRow: entityRow, entityPrev: previous)
        } else {
            let insert = try db.statement(
                """
                INSERT INTO events (local_offset, feed, seq, event_id, time_ms, entity, payload, arrival_ms, entity_prev)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                """)
            // Bound one by one: the hottest statement, run once per stored event.
            try insert.bind(.int(offset), at: 1)
            try insert.bind(.int(feedRow), at: 2)
            try insert.bind(.int(Int64(event.seq)), at: 3)
            try insert.bind(.uuid(event.eventID), at: 4)
            try insert.bind(.int(event.timeMs), at: 5)
            try insert.bind(.int(entityRow), at: 6)
            try insert.bind(.text(event.payload), at: 7)
            try insert.bind(.int(arrivalMs), at: 8)
            try insert.bind(previous.map { .int($0) } ?? .null, at: 9)
            try insert.run()
        }
        pending?.heads[entityRow] = offset
        if event.feed.isThinClient { try indexThinClientEvent(event.eventID, offset: offset) }
        if SessionEvent.mayBe(event.payload), SessionEvent.parse(event.payload) != nil {
            try db.cached("UPDATE entities SET claimed = 1 WHERE id = ?").run([.int(entityRow)])
        }
        let stored = StoredEvent(event: event, offset: offset, arrivalTimeMs: arrivalMs)
        if let count = storedByLastWrite?.count {
            if count < EventLog.storedByLastWriteLimit {
                storedByLastWrite!.append(stored)
            } else {
                storedByLastWrite = nil
            }
        }
        return InsertedEvent(
            stored: stored, entityRow: entityRow,
            startsChain: previous == nil)
    }

    /// The event id stored at a feed slot, in a row or a block, if any.
    func eventID(feedRow: Int64, seq: UInt64) throws -> UUID? {
        let statement = try db.statement("SELECT event_id FROM events WHERE feed = ? AND seq = ?")
        try statement.bind([.int(feedRow), .int(Int64(seq))])
        if try statement.step() { return UUID(bytes: statement.blob(0)) }
        let slot = Int64(seq)
        return try blockEvents(feedRow: feedRow, seqs: slot...slot, limit: 1).first?.stored.event.eventID
    }
}
