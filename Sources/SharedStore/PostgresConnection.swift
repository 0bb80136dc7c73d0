import CPostgres
import Foundation

/// One libpq connection: statements with text parameters and text
/// results, and notifications for `LISTEN`. Not `Sendable`: one owner uses
/// it at a time.
///
/// ```swift
/// let db = try PostgresConnection("postgresql://peersync@localhost/site")
/// let rows = try db.query("SELECT server_offset FROM peersync_site WHERE id = $1", ["1"])
/// ```
public final class PostgresConnection {
    private let handle: OpaquePointer

    /// Connects with a libpq connection string (a `postgresql://` URL or
    /// `key=value` pairs); throws what the server or libpq said.
    public init(_ conninfo: String) throws {
        guard let handle = PQconnectdb(conninfo) else { throw PostgresError("out of memory", connectionLost: true) }
        guard PQstatus(handle) == CONNECTION_OK else {
            let message = String(cString: PQerrorMessage(handle))
            PQfinish(handle)
            throw PostgresError(message, connectionLost: true)
        }
        self.handle = handle
        _ = try? execute("SET client_min_messages = warning")
    }

    deinit { PQfinish(handle) }

    /// False once the connection broke.
    public var isOpen: Bool { PQstatus(handle) == CONNECTION_OK }

    /// The socket, to wait on for notifications.
    public var socket: Int32 { PQsocket(handle) }

    /// Runs `sql` with `$1`… bound to `parameters` (text, nil for NULL) and
    /// returns its rows, each column as text (nil for NULL).
    @discardableResult
    public func query(_ sql: String, _ parameters: [String?] = []) throws -> [[String?]] {
        let result = try run(sql, parameters)
        defer { PQclear(result) }
        let rows = Int(PQntuples(result))
        let columns = Int(PQnfields(result))
        var table: [[String?]] = []
        table.reserveCapacity(rows)
        for row in 0..<rows {
            var values: [String?] = []
            values.reserveCapacity(columns)
            for column in 0..<columns {
                if PQgetisnull(result, Int32(row), Int32(column)) != 0 {
                    values.append(nil)
                } else {
                    values.append(String(cString: PQgetvalue(result, Int32(row), Int32(column))))
                }
            }
            table.append(values)
        }
        return table
    }

    /// Runs `sql` (several statements when there are no parameters).
    public func execute(_ sql: String, _ parameters: [String?] = []) throws {
        PQclear(try run(sql, parameters))
    }

    /// The first column of the first row as an integer.
    public func int(_ sql: String, _ parameters: [String?] = []) throws -> Int64? {
        try query(sql, parameters).first?.first.flatMap { $0.flatMap { Int64($0) } }
    }

    /// Reads what the server sent and returns the channels of the
    /// notifications that arrived; throws when the connection broke.
    public func notifications() throws -> [String] {
        guard PQconsumeInput(handle) == 1 else {
            throw PostgresError(String(cString: PQerrorMessage(handle)), connectionLost: true)
        }
        var channels: [String] = []
        while let notice = PQnotifies(handle) {
            channels.append(String(cString: notice.pointee.relname))
            PQfreemem(notice)
        }
        return channels
    }

    private func run(_ sql: String, _ parameters: [String?]) throws -> OpaquePointer {
        let result: OpaquePointer?
        if parameters.isEmpty {
            result = PQexec(handle, sql)
        } else {
            let copies = parameters.map { $0.map { strdup($0) } ?? nil }
            defer { for copy in copies { free(copy) } }
            result = copies.map { UnsafePointer($0) }.withUnsafeBufferPointer { values in
                PQexecParams(handle, sql, Int32(parameters.count), nil, values.baseAddress, nil, nil, 0)
            }
        }
        guard let result else {
            throw PostgresError(String(cString: PQerrorMessage(handle)), connectionLost: !isOpen)
        }
        let status = PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
            let message = String(cString: PQresultErrorMessage(result))
            let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) }
            PQclear(result)
            let lost = !isOpen || (state?.hasPrefix("08") ?? false) || state == "57P01" || state == "57P03"
            throw PostgresError(
                message.isEmpty ? String(cString: PQerrorMessage(handle)) : message, sqlState: state,
                connectionLost: lost)
        }
        return result
    }
}
