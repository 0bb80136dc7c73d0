import Foundation

extension EventLog {
    /// The select list and joins that read a `StoredEvent`; see `storedEvent(from:)`.
    static let storedEventSelect = """
        SELECT e.local_offset, e.event_id, f.replica_id, f.scope, e.seq, e.time_ms,
               n.entity_type, n.entity_id, e.payload, e.arrival_ms, e.entity, e.entity_prev IS NULL
        FROM events e JOIN feeds f ON f.id = e.feed JOIN entities n ON n.id = e.entity
        """

    /// One entity's events, newest first, by walking `entity_prev` from the
    /// event at offset `?` (the chain replaces an index on `entity`).
    static let entityChainSelect = """
        WITH RECURSIVE chain(offset) AS (
            SELECT ?
            UNION ALL
            SELECT e.entity_prev FROM chain c JOIN events e ON e.local_offset = c.offset
            WHERE e.entity_prev IS NOT NULL)
        SELECT e.local_offset, e.event_id, f.replica_id, f.scope, e.seq, e.time_ms,
               n.entity_type, n.entity_id, e.payload, e.arrival_ms, e.entity, e.entity_prev IS NULL
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

    /// Every event of one entity up to its event at offset `head`, in canonical order.
    func entityHistory(head: Int64) throws -> [StoredEvent] {
        try storedEventsWithEntity("", [.int(head)], select: EventLog.entityChainSelect).map(\.stored)
            .sorted { $0.event.orderKey < $1.event.orderKey }
    }

    /// Inside a write transaction: the arrival time of the events it stores,
    /// the wall clock but never before the newest stored arrival, so that
    /// arrival times (a relay's server times, docs/relay.md) follow local
    /// offsets even after the clock was set back.
    func arrivalTime(wallMs: Int64) throws -> Int64 {
        let newest = try db.scalarInt("SELECT arrival_ms FROM events ORDER BY local_offset DESC LIMIT 1")
        return max(wallMs, newest ?? wallMs)
    }

    /// Inside a write transaction, after `syncPending()`: stores one event
    /// row, chained to its entity's previous event (and, in a thin-client
    /// feed, indexed by its id).
    func insertEventRow(_ event: Event, feedRow: Int64, entityRow: Int64, arrivalMs: Int64) throws -> InsertedEvent {
        let previous = try chainHead(entityRow: entityRow)
        let insert = try db.statement(
            """
            INSERT INTO events (feed, seq, event_id, time_ms, entity, payload, arrival_ms, entity_prev)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """)
        // Bound one by one: the hottest statement, run once per stored event.
        try insert.bind(.int(feedRow), at: 1)
        try insert.bind(.int(Int64(event.seq)), at: 2)
        try insert.bind(.uuid(event.eventID), at: 3)
        try insert.bind(.int(event.timeMs), at: 4)
        try insert.bind(.int(entityRow), at: 5)
        try insert.bind(.text(event.payload), at: 6)
        try insert.bind(.int(arrivalMs), at: 7)
        try insert.bind(previous.map { .int($0) } ?? .null, at: 8)
        try insert.run()
        let offset = db.lastInsertRowID
        pending?.heads[entityRow] = offset
        if event.feed.isThinClient { try indexThinClientEvent(event.eventID, offset: offset) }
        if SessionEvent.mayBe(event.payload), SessionEvent.parse(event.payload) != nil {
            try db.cached("UPDATE entities SET claimed = 1 WHERE id = ?").run([.int(entityRow)])
        }
        return InsertedEvent(
            stored: StoredEvent(event: event, offset: offset, arrivalTimeMs: arrivalMs), entityRow: entityRow,
            startsChain: previous == nil)
    }

    /// The event id stored at a feed slot, if any.
    func eventID(feedRow: Int64, seq: UInt64) throws -> UUID? {
        let statement = try db.statement("SELECT event_id FROM events WHERE feed = ? AND seq = ?")
        try statement.bind([.int(feedRow), .int(Int64(seq))])
        guard try statement.step() else { return nil }
        return UUID(bytes: statement.blob(0))
    }
}
