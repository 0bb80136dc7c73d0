import CSQLite
import Foundation

/// A value bound to a statement parameter.
enum SQLiteValue {
    case int(Int64)
    case text(String)
    case blob([UInt8])
    /// A UUID as its 16 bytes in the order its hex string prints them (see `UUID.orderedBytes`).
    case uuid(UUID)
    case null
}

/// A prepared statement. Freed with its connection's cache.
final class SQLiteStatement {
    private let handle: OpaquePointer
    private unowned let connection: SQLiteConnection
    let sql: String

    init(connection: SQLiteConnection, sql: String) throws {
        var statement: OpaquePointer?
        let rc = sqlite3_prepare_v3(
            connection.handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        guard rc == SQLITE_OK, let statement else {
            throw SQLiteError(
                code: rc, message: connection.lastErrorMessage, sql: sql,
                systemErrno: sqlite3_system_errno(connection.handle))
        }
        self.handle = statement
        self.connection = connection
        self.sql = sql
    }

    deinit { sqlite3_finalize(handle) }

    func reset() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }

    func bind(_ values: [SQLiteValue]) throws {
        for (offset, value) in values.enumerated() {
            try bind(value, at: Int32(offset + 1))
        }
    }

    func bind(_ value: SQLiteValue, at index: Int32) throws {
        let rc: Int32
        switch value {
        case .int(let number):
            rc = sqlite3_bind_int64(handle, index, number)
        case .text(let text):
            // A native string's bytes are bound in place (SQLite copies them); no C string is made.
            // (An empty string takes the C string path: a NULL pointer would bind NULL.)
            let inPlace =
                text.isEmpty
                ? nil
                : text.utf8.withContiguousStorageIfAvailable { bytes in
                    bytes.withMemoryRebound(to: CChar.self) { buffer in
                        csqlite_bind_text_transient(handle, index, buffer.baseAddress, Int32(buffer.count))
                    }
                }
            rc =
                inPlace
                ?? text.utf8CString.withUnsafeBufferPointer { buffer in
                    csqlite_bind_text_transient(handle, index, buffer.baseAddress, Int32(buffer.count - 1))
                }
        case .blob(let bytes):
            rc = bytes.withUnsafeBytes { buffer in
                csqlite_bind_blob_transient(handle, index, buffer.baseAddress, Int32(buffer.count))
            }
        case .uuid(let id):
            rc = withUnsafeBytes(of: id.uuid) { buffer in
                csqlite_bind_blob_transient(handle, index, buffer.baseAddress, Int32(buffer.count))
            }
        case .null:
            rc = sqlite3_bind_null(handle, index)
        }
        guard rc == SQLITE_OK else { throw failure(rc) }
    }

    /// Advances to the next row; false when the statement is done.
    @discardableResult
    func step() throws -> Bool {
        let rc = sqlite3_step(handle)
        switch rc {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default: throw failure(rc)
        }
    }

    /// Steps to completion, for statements that return no rows.
    func run(_ values: [SQLiteValue] = []) throws {
        try bind(values)
        while try step() {}
    }

    func isNull(_ column: Int32) -> Bool { sqlite3_column_type(handle, column) == SQLITE_NULL }
    func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(handle, column) }

    func text(_ column: Int32) -> String {
        guard let pointer = sqlite3_column_text(handle, column) else { return "" }
        let count = Int(sqlite3_column_bytes(handle, column))
        return String(decoding: UnsafeBufferPointer(start: pointer, count: count), as: UTF8.self)
    }

    /// The column's text as UTF-8 bytes, read in place (no `String` is
    /// made); the buffer is valid only inside `body`.
    func withText<T>(_ column: Int32, _ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T {
        let pointer = sqlite3_column_text(handle, column)
        let count = Int(sqlite3_column_bytes(handle, column))
        return try body(UnsafeRawBufferPointer(start: pointer, count: pointer == nil ? 0 : count))
    }

    /// True when the column's text is byte for byte `string`, without making a `String`.
    func text(_ column: Int32, equals string: String) -> Bool {
        let pointer = sqlite3_column_text(handle, column)
        let count = Int(sqlite3_column_bytes(handle, column))
        let stored = UnsafeBufferPointer(start: pointer, count: pointer == nil ? 0 : count)
        return string.utf8.withContiguousStorageIfAvailable { $0.elementsEqual(stored) }
            ?? string.utf8.elementsEqual(stored)
    }

    /// A 16-byte blob column as a UUID (see `UUID.orderedBytes`); nil for any other value.
    func uuid(_ column: Int32) -> UUID? {
        guard let pointer = sqlite3_column_blob(handle, column), sqlite3_column_bytes(handle, column) == 16 else {
            return nil
        }
        return UUID(uuid: UnsafeRawPointer(pointer).loadUnaligned(as: uuid_t.self))
    }

    func blob(_ column: Int32) -> [UInt8] {
        guard let pointer = sqlite3_column_blob(handle, column) else { return [] }
        let count = Int(sqlite3_column_bytes(handle, column))
        return Array(UnsafeRawBufferPointer(start: pointer, count: count))
    }

    private func failure(_ rc: Int32) -> SQLiteError {
        SQLiteError(
            code: rc, message: connection.lastErrorMessage, sql: sql,
            systemErrno: sqlite3_system_errno(connection.handle))
    }
}
