import Foundation

/// Wakes the change streams when events are stored: a counter that goes up
/// with every store, and a wait for it to pass a value.
final class ChangeSignal: @unchecked Sendable {
    private let condition = NSCondition()
    private var generation: UInt64 = 0
    private var closed = false

    /// The current generation; pass it to `wait(after:timeout:)`.
    var current: UInt64 { condition.withLock { generation } }

    /// Something was stored.
    func bump() {
        condition.withLock {
            generation &+= 1
            condition.broadcast()
        }
    }

    /// Blocks until the generation passes `seen`, the signal closes, or
    /// `timeout` passes. Returns false once closed.
    func wait(after seen: UInt64, timeout: TimeInterval) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer { condition.unlock() }
        while generation == seen && !closed {
            if !condition.wait(until: deadline) { break }
        }
        return !closed
    }

    /// Wakes every waiter for good (shutdown).
    func close() {
        condition.withLock {
            closed = true
            condition.broadcast()
        }
    }
}
