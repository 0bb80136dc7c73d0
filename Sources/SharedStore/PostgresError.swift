import Foundation

/// Why a call to PostgreSQL failed, in words an operator can act on.
public struct PostgresError: Error, CustomStringConvertible, Sendable {
    /// The SQLSTATE code, when the server answered with one (`08006`:
    /// connection failure, `23505`: a unique key taken, …).
    public var sqlState: String?
    /// The server's or libpq's message, trimmed.
    public var message: String
    /// True when the connection is gone: the server is down, restarting or
    /// unreachable, so the same call may work later.
    public var connectionLost: Bool

    public init(_ message: String, sqlState: String? = nil, connectionLost: Bool = false) {
        self.message = message.trimmingCharacters(in: .whitespacesAndNewlines)
        self.sqlState = sqlState
        self.connectionLost = connectionLost
    }

    public var description: String {
        sqlState.map { "PostgreSQL: \(message) (SQLSTATE \($0))" } ?? "PostgreSQL: \(message)"
    }
}
