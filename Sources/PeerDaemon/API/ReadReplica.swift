import Foundation
import Replica

/// The API's own connection to the replica's database, for reads: in WAL
/// mode they never wait for sync's writes, and a flood of them never
/// queues in front of sync. One request at a time uses it.
///
/// `@unchecked Sendable`: `log` is only used with `lock` held.
final class ReadReplica: @unchecked Sendable {
    private let lock = NSLock()
    private let log: EventLog
    private let onError: @Sendable (any Error) -> Void
    let replicaID: String

    /// - Parameter onError: hears every error a read throws, so that a
    ///   storage fault it meets degrades the replica (`StorageExecutor.noteFault`).
    init(path: String, onError: @escaping @Sendable (any Error) -> Void = { _ in }) throws {
        log = try EventLog.open(at: path)
        replicaID = log.replicaID
        self.onError = onError
    }

    func read<T>(_ body: (EventLog) throws -> T) throws -> T {
        do {
            return try lock.withLock { try body(log) }
        } catch {
            onError(error)
            throw error
        }
    }
}
