import Foundation
import SyncProtocol

/// Messages read from connections and not yet handed to the node, per
/// connection. While the node's queue is busy (storing a batch), the next
/// batches wait here and are then handed over together, so the node can
/// store them in one transaction. Bounded by the sender's window of
/// unacknowledged batches.
final class MessageInbox: @unchecked Sendable {
    private let lock = NSLock()
    private var pending: [ConnectionID: [Message]] = [:]

    /// Adds `message`; true when the connection had nothing pending, so the
    /// caller must schedule a `take`.
    func add(_ message: Message, for id: ConnectionID) -> Bool {
        lock.withLock {
            let wasEmpty = pending[id, default: []].isEmpty
            pending[id, default: []].append(message)
            return wasEmpty
        }
    }

    /// Everything pending for the connection, in arrival order.
    func take(_ id: ConnectionID) -> [Message] {
        lock.withLock { pending.removeValue(forKey: id) ?? [] }
    }
}
