import CSQLite

/// A failed SQLite call: the primary result code, SQLite's message, and the statement.
public struct SQLiteError: Error, CustomStringConvertible, Sendable {
    /// The extended result code SQLite returned.
    public let code: Int32
    /// SQLite's own message for the failure.
    public let message: String
    /// The SQL that failed, when there was one.
    public let sql: String?

    /// The primary result code (`SQLITE_BUSY`, `SQLITE_FULL`, ...), without extended bits.
    public var primaryCode: Int32 { code & 0xFF }

    /// True when the disk (or a quota) is full.
    public var isDiskFull: Bool { primaryCode == SQLITE_FULL }

    /// True when the file is damaged or is not a database.
    public var isCorruptOrNotADatabase: Bool {
        primaryCode == SQLITE_CORRUPT || primaryCode == SQLITE_NOTADB
    }

    public var description: String {
        var text = "SQLite error \(primaryCode): \(message)"
        if isDiskFull { text += " (the disk is full: free space and retry; nothing was written)" }
        if let sql { text += " [\(sql.prefix(120))]" }
        return text
    }
}
