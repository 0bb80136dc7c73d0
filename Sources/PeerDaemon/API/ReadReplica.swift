import Foundation
import Replica

/// The API's own connection to the replica's database, for reads: in WAL
/// mode they never wait for sync's writes, and a flood of them never
/// queues in front of sync. One request at a time uses it.
final class ReadReplica: @unchecked Sendable {
    private let lock = NSLock()
    private let log: EventLog
    let replicaID: String

    init(path: String) throws {
        log = try EventLog.open(at: path)
        replicaID = log.replicaID
    }

    func read<T>(_ body: (EventLog) throws -> T) rethrows -> T {
        try lock.withLock { try body(log) }
    }
}
