import Foundation
import Replica
import TestSupport

/// What `peerd status --json` prints.
struct ReplicaStatus: Decodable, Equatable, CustomStringConvertible {
    struct Head: Decodable, Hashable {
        var replica_id: String
        var scope: String
        var seq: UInt64
    }

    var replica_id: String
    var cursor: [Head]
    var event_count: Int
    var state_hash: String
    var forks: Int
    var poison_events: Int

    var description: String {
        let heads = cursor.map { "\($0.replica_id.prefix(8))/\($0.scope)=\($0.seq)" }.joined(separator: ",")
        return "\(replica_id.prefix(8)): \(event_count) events, hash \(state_hash.prefix(12)), cursor [\(heads)]"
    }

    /// The cursor in a form that compares regardless of order.
    var heads: Set<Head> { Set(cursor) }

    /// `peerd status --json` on a data directory (a real process).
    static func of(_ data: URL) throws -> ReplicaStatus {
        let result = try Executables.peerd(["status", "--json"], data: data)
        guard result.status == 0 else {
            throw ChildProcessError(
                "peerd status on \(data.lastPathComponent) exited \(result.status): \(result.stderr)")
        }
        return try JSONDecoder().decode(ReplicaStatus.self, from: Data(result.stdout.utf8))
    }
}

/// Cheap reads of a replica's database from the test process, for polling
/// at a rate a `peerd status` process (which hashes every entity) cannot
/// keep up with on a large log. Each call opens and closes the database.
enum Peek {
    static func log(_ data: URL) throws -> EventLog {
        try EventLog.open(at: data.appendingPathComponent("replica.db").path)
    }

    static func eventCount(_ data: URL) throws -> Int {
        Int(try log(data).eventCount())
    }

    static func cursor(_ data: URL) throws -> VectorCursor {
        try log(data).cursor()
    }

    /// Whether the replica holds the item, in any state.
    static func item(_ id: String, in data: URL) throws -> Item? {
        try log(data).projections(Item.self).first { $0.id == id }
    }
}

/// Waits until replicas agree: the same vector cursor and the same state
/// hash, as `peerd status --json` reports them.
enum Convergence {
    struct Timeout: Error, CustomStringConvertible {
        var statuses: [String]
        var timeout: Duration
        var description: String {
            "replicas did not converge within \(timeout):\n" + statuses.joined(separator: "\n")
        }
    }

    /// Polls until every replica in `data` reports the same cursor and
    /// state hash; returns their statuses then. Throws `Timeout` (with what
    /// each replica last reported) when `timeout` passes first.
    ///
    /// The cursors are compared in-process first (cheap); `peerd status`,
    /// which hashes every entity, runs only once they agree.
    @discardableResult
    static func wait(_ data: [URL], timeout: Duration = .seconds(30)) throws -> [ReplicaStatus] {
        var last: [ReplicaStatus] = []
        let agreed = try Poll.until(timeout: timeout, every: .milliseconds(20)) {
            let cursors = try data.map { try Peek.cursor($0) }
            guard Set(cursors).count == 1 else { return false }
            last = try data.map { try ReplicaStatus.of($0) }
            return Set(last.map(\.heads)).count == 1 && Set(last.map(\.state_hash)).count == 1
        }
        guard agreed else {
            let statuses = try data.map { try ReplicaStatus.of($0) }
            throw Timeout(
                statuses: zip(data, statuses).map { "\($0.lastPathComponent): \($1)" }, timeout: timeout)
        }
        return last
    }
}
