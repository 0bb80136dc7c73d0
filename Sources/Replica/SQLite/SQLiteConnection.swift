import CSQLite

/// One open SQLite database handle.
///
/// Not `Sendable`: a connection is used by one owner at a time. The owner
/// (the `EventLog`) serialises access.
final class SQLiteConnection {
    let handle: OpaquePointer
    private var statementCache: [String: SQLiteStatement] = [:]
    /// Statements of SQL literals, found by the literal's address: hashing
    /// the SQL text on every call was a visible cost per stored event.
    private var literalStatements: [UnsafeRawPointer: SQLiteStatement] = [:]

    /// How long a statement waits for a lock another connection holds
    /// (a reader's checkpoint as it closes, a writer) before it fails with
    /// `SQLITE_BUSY`.
    static let busyTimeoutMs: Int32 = 10_000

    /// Opens (and with `create`, creates) the database at `path`; with
    /// `readOnly`, for reading only (every write fails with `SQLITE_READONLY`).
    /// The busy timeout is set before anything reads the file, so that even
    /// the first `PRAGMA` waits out another process's lock.
    init(path: String, create: Bool, readOnly: Bool = false) throws {
        var db: OpaquePointer?
        var flags = (readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE) | SQLITE_OPEN_NOMUTEX
        if create && !readOnly { flags |= SQLITE_OPEN_CREATE }
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            let systemErrno = db.map { sqlite3_system_errno($0) } ?? 0
            if let db { sqlite3_close_v2(db) }
            throw SQLiteError(code: rc, message: message, sql: nil, systemErrno: systemErrno)
        }
        handle = db
        sqlite3_extended_result_codes(db, 1)
        sqlite3_busy_timeout(db, Self.busyTimeoutMs)
    }

    deinit {
        statementCache.removeAll()
        literalStatements.removeAll()
        sqlite3_close_v2(handle)
    }

    /// Runs one or more statements that return no rows.
    func execute(_ sql: String) throws {
        var errorMessage: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(handle, sql, nil, nil, &errorMessage)
        if rc != SQLITE_OK {
            let message = errorMessage.map { String(cString: $0) } ?? lastErrorMessage
            sqlite3_free(errorMessage)
            throw SQLiteError(code: rc, message: message, sql: sql, systemErrno: sqlite3_system_errno(handle))
        }
    }

    /// A prepared statement, kept for reuse; its bindings are cleared each time.
    func cached(_ sql: String) throws -> SQLiteStatement {
        if let statement = statementCache[sql] {
            statement.reset()
            return statement
        }
        let statement = try SQLiteStatement(connection: self, sql: sql)
        statementCache[sql] = statement
        return statement
    }

    /// As `cached(_:)`, for SQL written as a literal in the source.
    func statement(_ sql: StaticString) throws -> SQLiteStatement {
        let key = UnsafeRawPointer(sql.utf8Start)
        if let statement = literalStatements[key] {
            statement.reset()
            return statement
        }
        let statement = try cached(sql.description)
        literalStatements[key] = statement
        return statement
    }

    /// The value of the first column of the first row, or nil when there is no row.
    func scalarInt(_ sql: String, _ arguments: [SQLiteValue] = []) throws -> Int64? {
        let statement = try cached(sql)
        try statement.bind(arguments)
        guard try statement.step() else { return nil }
        return statement.isNull(0) ? nil : statement.int64(0)
    }

    /// Runs `body` in a transaction that takes the write lock at once
    /// (`BEGIN IMMEDIATE`), so two writers never deadlock on a lock upgrade.
    /// Commits when `body` returns, rolls back when it throws.
    func writeTransaction<T>(_ body: () throws -> T) throws -> T {
        try execute("BEGIN IMMEDIATE")
        do {
            let result = try body()
            finishStatements()
            try execute("COMMIT")
            return result
        } catch {
            finishStatements()
            try? execute("ROLLBACK")
            throw error
        }
    }

    /// Runs `body` in a read transaction so that all its reads see one snapshot.
    func readTransaction<T>(_ body: () throws -> T) throws -> T {
        try execute("BEGIN")
        defer {
            finishStatements()
            try? execute("COMMIT")
        }
        return try body()
    }

    /// Resets every cached statement. A statement left on a row keeps a read
    /// snapshot open after its transaction ends, and an open snapshot stops
    /// checkpoints from recycling the WAL, which then grows without bound.
    func finishStatements() {
        for statement in statementCache.values { statement.reset() }
    }

    var lastErrorMessage: String { String(cString: sqlite3_errmsg(handle)) }
    var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }
    var changes: Int { Int(sqlite3_changes(handle)) }
}
