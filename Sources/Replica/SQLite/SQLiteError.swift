import CSQLite
import Glibc

/// A failed SQLite call: the result code, SQLite's message, the statement,
/// and the system's `errno` behind an I/O failure.
public struct SQLiteError: Error, CustomStringConvertible, Sendable {
    /// The extended result code SQLite returned.
    public let code: Int32
    /// SQLite's own message for the failure.
    public let message: String
    /// The SQL that failed, when there was one.
    public let sql: String?
    /// `sqlite3_system_errno` when the call failed: the `errno` of the
    /// system call behind an I/O failure (`ENOSPC`, `EIO`, ...); 0 when
    /// there was none, or SQLite did not keep it (a failed commit often
    /// loses it to the rollback that follows).
    public let systemErrno: Int32

    init(code: Int32, message: String, sql: String?, systemErrno: Int32 = 0) {
        self.code = code
        self.message = message
        self.sql = sql
        self.systemErrno = systemErrno
    }

    /// The primary result code (`SQLITE_BUSY`, `SQLITE_FULL`, ...), without extended bits.
    public var primaryCode: Int32 { code & 0xFF }

    /// True when the disk (or a quota) is full.
    public var isDiskFull: Bool { faultKind == .diskFull }

    /// True when the file is damaged or is not a database.
    public var isCorruptOrNotADatabase: Bool { faultKind == .damaged }

    /// What kind of storage fault this is, or nil when it is not one (a
    /// constraint, a busy database, a mistake in the SQL).
    ///
    /// A failed write with `errno` `ENOSPC` is `.diskFull` whether SQLite
    /// reported it as `SQLITE_FULL` or as an I/O error.
    ///
    /// ```swift
    /// if let kind = (error as? SQLiteError)?.faultKind { print("storage fault: \(kind)") }
    /// ```
    public var faultKind: StorageFault.Kind? {
        switch primaryCode {
        case SQLITE_CORRUPT, SQLITE_NOTADB:
            return .damaged
        case SQLITE_FULL:
            return .diskFull
        case SQLITE_IOERR:
            if code == Self.ioErrorCorruptFileSystem { return .damaged }
            if code == Self.ioErrorNoMemory { return nil }
            // SQLite reports some failed writes (the -shm file's size, an
            // fsync) as I/O errors; the system's errno says what they were.
            switch systemErrno {
            case ENOSPC, EDQUOT: return .diskFull
            case EROFS: return .readOnly
            default: return .io
            }
        case SQLITE_CANTOPEN where systemErrno == ENOSPC || systemErrno == EDQUOT:
            return .diskFull
        case SQLITE_READONLY, SQLITE_CANTOPEN, SQLITE_PERM:
            return .readOnly
        default:
            return nil
        }
    }

    // Extended codes that Swift does not import (macros built with shifts).
    private static let ioErrorNoMemory: Int32 = SQLITE_IOERR | (12 << 8)
    private static let ioErrorCorruptFileSystem: Int32 = SQLITE_IOERR | (33 << 8)

    /// SQLite's message with the system's reason, when there is one:
    /// "disk I/O error (Input/output error)".
    public var messageWithSystemReason: String {
        // The errno is that of the connection's latest failed system call:
        // it belongs to this failure only when the failure was one.
        guard systemErrno != 0, [SQLITE_IOERR, SQLITE_CANTOPEN, SQLITE_FULL].contains(primaryCode) else {
            return message
        }
        return "\(message) (\(String(cString: strerror(systemErrno))))"
    }

    public var description: String {
        var text = "SQLite error \(primaryCode): \(messageWithSystemReason)"
        if isDiskFull { text += " (the disk is full: free space and retry; nothing was written)" }
        if let sql { text += " [\(sql.prefix(120))]" }
        return text
    }
}
