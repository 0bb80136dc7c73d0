import CSQLite
import Replica

/// A table shaped like `events` in `Sources/Replica/Storage/Schema.swift`,
/// written through the SQLite C API with nothing in between: prepared
/// statements, rebound per row.
final class RawEventTable {
    /// Which indexes and statements a write carries besides the row itself.
    enum Shape {
        /// Only `local_offset INTEGER PRIMARY KEY`: rows go to the right edge of one B-tree.
        case primaryKeyOnly
        /// Also `UNIQUE (feed, seq)` and an index on `entity`: the indexes
        /// `events` had in schema version 1 (version 2 dropped the entity
        /// index, `Schema.swift`), for comparison with earlier runs.
        case sameIndexes
        /// For analysis: `UNIQUE (feed, seq)` but no index on `entity`.
        case feedSeqIndexOnly
        /// For analysis: the statements `EventLog` runs for a large batch
        /// (schema version 2), without the Swift around them. Per batch:
        /// read `projected_offset`, the newest offset, the clock and the
        /// feed head; per row the entity's chain head (`entities.last_offset`
        /// unless it is pending) and the insert with `entity_prev` (and new
        /// `entities` rows, `UNIQUE (entity_type, entity_id)`); then the head
        /// and the clock. A pending entity's projection row is read once;
        /// once 20,000 events or 8,192 entities are pending, each pending
        /// entity's row is updated with a ~150-byte state and the chain
        /// head, and `projected_offset` is set.
        case eventLogStatements
        /// Only the integer primary key, and every row's random 16-byte id
        /// in a table keyed by it (`event_id BLOB PRIMARY KEY … WITHOUT
        /// ROWID`), as schema version 9 indexes thin-client events: what
        /// SQLite itself costs as an index of random keys grows.
        case randomIDIndex
    }

    private let db: SQLiteConnection
    private let shape: Shape
    private var entityRows: [String: Int64] = [:]
    private var clockMs: Int64 = 0
    private var headSeq: Int64 = 0
    /// Entities with events whose projection rows are not written yet: newest offset and row.
    private var pending: [Int64: (head: Int64, row: RawRow)] = [:]
    private var pendingEvents = 0

    /// Creates the database and its tables; the pragmas are those `EventLog`
    /// sets (WAL, `synchronous=FULL`, 8 MiB cache, checkpoint every 10,000
    /// pages), so that only the work differs.
    init(path: String, shape: Shape) throws {
        db = try SQLiteConnection(path: path)
        self.shape = shape
        do {
            try db.execute(
                """
                PRAGMA journal_mode = WAL;
                PRAGMA synchronous = FULL;
                PRAGMA cache_size = -8192;
                PRAGMA wal_autocheckpoint = 10000;
                PRAGMA temp_store = MEMORY;
                CREATE TABLE events (
                    local_offset INTEGER PRIMARY KEY,
                    feed         INTEGER NOT NULL,
                    seq          INTEGER NOT NULL,
                    event_id     BLOB NOT NULL,
                    time_ms      INTEGER NOT NULL,
                    entity       INTEGER NOT NULL,
                    payload      TEXT NOT NULL,
                    arrival_ms   INTEGER NOT NULL
                );
                """)
            if shape == .randomIDIndex {
                try db.execute(
                    "CREATE TABLE ids (event_id BLOB PRIMARY KEY, local_offset INTEGER NOT NULL) WITHOUT ROWID")
            }
            if shape != .primaryKeyOnly && shape != .randomIDIndex {
                try db.execute("CREATE UNIQUE INDEX events_by_feed_seq ON events (feed, seq)")
            }
            if shape == .sameIndexes {
                try db.execute("CREATE INDEX events_by_entity ON events (entity)")
            }
            if shape == .eventLogStatements {
                try db.execute(
                    """
                    ALTER TABLE events ADD COLUMN entity_prev INTEGER;
                    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
                    INSERT INTO meta (key, value) VALUES ('clock_ms', '0'), ('projected_offset', '0');
                    CREATE TABLE feeds (
                        id INTEGER PRIMARY KEY, replica_id TEXT NOT NULL, scope TEXT NOT NULL,
                        head_seq INTEGER NOT NULL DEFAULT 0, UNIQUE (replica_id, scope));
                    INSERT INTO feeds (id, replica_id, scope) VALUES (1, 'bench-local', 'default');
                    CREATE TABLE entities (
                        id INTEGER PRIMARY KEY, entity_type TEXT NOT NULL, entity_id TEXT NOT NULL,
                        state TEXT, last_time_ms INTEGER, last_seq INTEGER, last_event_id BLOB,
                        last_offset INTEGER, UNIQUE (entity_type, entity_id));
                    """)
            }
        }
    }

    /// Inserts `rows` in one transaction and one commit.
    func insert(_ rows: [RawRow]) throws {
        try db.execute("BEGIN IMMEDIATE")
        do {
            if shape == .eventLogStatements {
                try insertLikeEventLog(rows)
            } else {
                for row in rows { try insertEventRow(row, entity: row.entity) }
            }
            try db.execute("COMMIT")
        } catch {
            try? db.execute("ROLLBACK")
            throw error
        }
    }

    private func insertEventRow(_ row: RawRow, entity: Int64) throws {
        let insert = try db.prepared(
            """
            INSERT INTO events (feed, seq, event_id, time_ms, entity, payload, arrival_ms)
            VALUES (?, ?, ?, ?, ?, ?, ?)
            """)
        bindEventColumns(row, entity: entity, in: insert)
        try db.run(insert)
        guard shape == .randomIDIndex else { return }
        let index = try db.prepared("INSERT INTO ids (event_id, local_offset) VALUES (?, ?)")
        bind(row.eventID, at: 1, in: index)
        sqlite3_bind_int64(index, 2, sqlite3_last_insert_rowid(db.handle))
        try db.run(index)
    }

    /// Binds the seven columns every shape's `events` has, in table order.
    private func bindEventColumns(_ row: RawRow, entity: Int64, in insert: OpaquePointer) {
        sqlite3_bind_int64(insert, 1, row.feed)
        sqlite3_bind_int64(insert, 2, row.seq)
        bind(row.eventID, at: 3, in: insert)
        sqlite3_bind_int64(insert, 4, row.timeMs)
        sqlite3_bind_int64(insert, 5, entity)
        bind(row.payload, at: 6, in: insert)
        sqlite3_bind_int64(insert, 7, row.arrivalMs)
    }

    private func insertLikeEventLog(_ rows: [RawRow]) throws {
        _ = try db.scalar("SELECT value FROM meta WHERE key = 'projected_offset'")
        _ = try db.scalar("SELECT coalesce(max(local_offset), 0) FROM events")
        clockMs = try db.scalar("SELECT value FROM meta WHERE key = 'clock_ms'")
        headSeq = try db.scalar("SELECT head_seq FROM feeds WHERE id = 1")
        let insert = try db.prepared(
            """
            INSERT INTO events (feed, seq, event_id, time_ms, entity, payload, arrival_ms, entity_prev)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """)
        for row in rows {
            let entity = try entityRow(row.entityID)
            var previous = pending[entity]?.head
            if previous == nil {
                // Not pending: its chain head and projection row are read, as a fold on top of it does.
                let read = try db.prepared(
                    "SELECT last_offset, state, last_time_ms, last_seq, last_event_id FROM entities WHERE id = ?")
                sqlite3_bind_int64(read, 1, entity)
                if sqlite3_step(read) == SQLITE_ROW, sqlite3_column_type(read, 0) != SQLITE_NULL {
                    previous = sqlite3_column_int64(read, 0)
                }
                sqlite3_reset(read)
            }
            bindEventColumns(row, entity: entity, in: insert)
            if let previous { sqlite3_bind_int64(insert, 8, previous) } else { sqlite3_bind_null(insert, 8) }
            try db.run(insert)
            pending[entity] = (sqlite3_last_insert_rowid(db.handle), row)
            pendingEvents += 1
            headSeq += 1
            clockMs = max(clockMs + 1, row.timeMs)
        }
        let setHead = try db.prepared("UPDATE feeds SET head_seq = ? WHERE id = 1")
        sqlite3_bind_int64(setHead, 1, headSeq)
        try db.run(setHead)
        let setClock = try db.prepared("UPDATE meta SET value = ? WHERE key = 'clock_ms'")
        bind(String(clockMs), at: 1, in: setClock)
        try db.run(setClock)
        if pendingEvents >= 20_000 || pending.count >= 8_192 { try writePendingRows() }
    }

    /// The projection rows of every pending entity, and `projected_offset`.
    private func writePendingRows() throws {
        for (entity, (head, row)) in pending.sorted(by: { $0.key < $1.key }) {
            let update = try db.prepared(
                """
                UPDATE entities SET state = ?, last_time_ms = ?, last_seq = ?, last_event_id = ?, last_offset = ?
                WHERE id = ?
                """)
            bind(RawEventTable.state(of: row), at: 1, in: update)
            sqlite3_bind_int64(update, 2, row.timeMs)
            sqlite3_bind_int64(update, 3, row.seq)
            bind(row.eventID, at: 4, in: update)
            sqlite3_bind_int64(update, 5, head)
            sqlite3_bind_int64(update, 6, entity)
            try db.run(update)
        }
        let projected = try db.prepared(
            "UPDATE meta SET value = (SELECT max(local_offset) FROM events) WHERE key = 'projected_offset'")
        try db.run(projected)
        pending = [:]
        pendingEvents = 0
    }

    /// Writes what is still pending, in its own transaction (the benchmark times it).
    func finish() throws {
        guard shape == .eventLogStatements, !pending.isEmpty else { return }
        try db.execute("BEGIN IMMEDIATE")
        do {
            try writePendingRows()
            try db.execute("COMMIT")
        } catch {
            try? db.execute("ROLLBACK")
            throw error
        }
    }

    /// The entity row, made on first sight (looked up first, as `EventLog` does for an id it has not cached).
    private func entityRow(_ entityID: String) throws -> Int64 {
        if let row = entityRows[entityID] { return row }
        let select = try db.prepared("SELECT id FROM entities WHERE entity_type = 'item' AND entity_id = ?")
        bind(entityID, at: 1, in: select)
        let found = sqlite3_step(select) == SQLITE_ROW ? sqlite3_column_int64(select, 0) : nil
        sqlite3_reset(select)
        if let found {
            entityRows[entityID] = found
            return found
        }
        let insert = try db.prepared("INSERT INTO entities (entity_type, entity_id) VALUES ('item', ?)")
        bind(entityID, at: 1, in: insert)
        try db.run(insert)
        let row = sqlite3_last_insert_rowid(db.handle)
        entityRows[entityID] = row
        return row
    }

    /// A projection of the size `Item` folds to.
    private static func state(of row: RawRow) -> String {
        #"{"deleted":false,"id":"\#(row.entityID)","last_modified_ms":\#(row.timeMs),"#
            + #""name":"Zinc-plated hex bolt ISO 4017 M6x40, box of 100","note":null,"quantity":\#(row.seq % 1000)}"#
    }

    private func bind(_ bytes: [UInt8], at index: Int32, in statement: OpaquePointer) {
        _ = bytes.withUnsafeBytes { csqlite_bind_blob_transient(statement, index, $0.baseAddress, Int32($0.count)) }
    }

    private func bind(_ text: String, at index: Int32, in statement: OpaquePointer) {
        _ = text.withCString { csqlite_bind_text_transient(statement, index, $0, Int32(text.utf8.count)) }
    }

    /// The version of the SQLite library linked in, e.g. `3.40.1`.
    static var sqliteVersion: String { String(cString: sqlite3_libversion()) }
}

/// One row of `RawEventTable`: the columns of `events` with their values.
struct RawRow {
    var feed: Int64
    var seq: Int64
    /// 16 bytes, like a stored event id.
    var eventID: [UInt8]
    var timeMs: Int64
    /// The interned entity number (what `events.entity` holds).
    var entity: Int64
    /// The entity's text id, for `Shape.eventLogStatements`.
    var entityID: String
    var payload: String
    var arrivalMs: Int64
}

extension RawRow {
    /// The row of a single durable commit timed now: feed 1, the change's
    /// item as its entity, a fresh random id.
    static func single(seq: Int64, _ change: ItemChange, random: inout SplitMix64) -> RawRow {
        let nowMs = SizeBenchmark.wallClockMs()
        return RawRow(
            feed: 1, seq: seq, eventID: random.uuidBytes(), timeMs: nowMs, entity: Int64(change.item + 1),
            entityID: change.entityID, payload: change.event.payload, arrivalMs: nowMs)
    }
}

extension RawEventTable {
    /// Seconds raw SQLite takes to insert `batches` into a new table at
    /// `path` (integer primary key only), one transaction a batch: the
    /// baseline of the HTTP benchmarks. The file is removed afterwards.
    static func insertSeconds(_ batches: [[RawRow]], workspace: Workspace, name: String) throws -> Double {
        try timedInsert(workspace: workspace, name: name) { insert in try batches.forEach(insert) }.seconds
    }

    /// `samples` single-row durable commits (`BEGIN IMMEDIATE; INSERT; COMMIT`) of the item workload
    /// into a fresh table, each timed; `after` runs after each one (untimed here) with its change.
    static func singleCommits(
        _ samples: Int, seed: UInt64, workspace: Workspace, name: String, after: (ItemChange) throws -> Void = { _ in }
    ) throws -> LatencySummary {
        let path = workspace.freshDatabase(name)
        defer { workspace.remove(path) }
        let table = try RawEventTable(path: path, shape: .primaryKeyOnly)
        var workload = ItemWorkload(eventCount: samples, maxItems: 20_000, distribution: .recentHot)
        var random = SplitMix64(seed: seed)
        var durations: [Duration] = []
        var seq: Int64 = 0
        while let change = workload.next() {
            seq += 1
            let row = RawRow.single(seq: seq, change, random: &random)
            durations.append(try Stopwatch.time { try table.insert([row]) })
            try after(change)
        }
        return LatencySummary(durations)
    }

    /// The same for batches `produce` hands to its `insert` one at a time (only the inserts are timed).
    static func timedInsert(
        workspace: Workspace, name: String, _ produce: ((_ rows: [RawRow]) throws -> Void) throws -> Void
    ) throws -> Stopwatch {
        let path = workspace.freshDatabase(name)
        defer { workspace.remove(path) }
        let table = try RawEventTable(path: path, shape: .primaryKeyOnly)
        var watch = Stopwatch()
        try produce { rows in try watch.measure { try table.insert(rows) } }
        try watch.measure { try table.finish() }
        return watch
    }
}

/// A failed SQLite call in the raw baseline.
struct RawSQLiteError: Error, CustomStringConvertible {
    var code: Int32
    var message: String

    var description: String { "SQLite error \(code): \(message)" }
}

/// One SQLite connection through the C API: statements prepared once and
/// kept, errors with SQLite's message.
final class SQLiteConnection {
    let handle: OpaquePointer
    private var statements: [String: OpaquePointer] = [:]

    /// Opens `path` (created when missing unless `readOnly`).
    init(path: String, readOnly: Bool = false) throws {
        var opened: OpaquePointer?
        let access = readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
        let rc = sqlite3_open_v2(path, &opened, access | SQLITE_OPEN_NOMUTEX, nil)
        guard rc == SQLITE_OK, let opened else {
            if let opened { sqlite3_close_v2(opened) }
            throw RawSQLiteError(code: rc, message: "cannot open \(path)")
        }
        handle = opened
        sqlite3_busy_timeout(handle, 5_000)
    }

    deinit {
        for statement in statements.values { sqlite3_finalize(statement) }
        sqlite3_close_v2(handle)
    }

    /// The statement for `sql`, prepared on first use.
    func prepared(_ sql: String) throws -> OpaquePointer {
        if let statement = statements[sql] { return statement }
        var statement: OpaquePointer?
        let rc = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        guard rc == SQLITE_OK, let statement else { throw failure(rc) }
        statements[sql] = statement
        return statement
    }

    /// Steps a statement that returns no rows, then resets it.
    func run(_ statement: OpaquePointer) throws {
        let rc = sqlite3_step(statement)
        sqlite3_reset(statement)
        guard rc == SQLITE_DONE else { throw failure(rc) }
    }

    /// The first column of the first row of `sql`.
    func scalar(_ sql: String) throws -> Int64 {
        let statement = try prepared(sql)
        defer { sqlite3_reset(statement) }
        let rc = sqlite3_step(statement)
        guard rc == SQLITE_ROW else { throw failure(rc) }
        return sqlite3_column_int64(statement, 0)
    }

    func execute(_ sql: String) throws {
        let rc = sqlite3_exec(handle, sql, nil, nil, nil)
        guard rc == SQLITE_OK else { throw failure(rc) }
    }

    func failure(_ rc: Int32) -> RawSQLiteError {
        RawSQLiteError(code: rc, message: String(cString: sqlite3_errmsg(handle)))
    }
}
