import Foundation

/// Wakes the change streams when events are stored, and once more when
/// the daemon shuts down.
///
/// ```swift
/// let token = changes.subscribe { stream.wakeUp() }
/// changes.bump()                // every subscriber's wake-up runs
/// changes.unsubscribe(token)
/// ```
///
/// `@unchecked Sendable`: its state is only touched with `lock` held; the
/// wake-ups run after it is released, so one may call back in.
final class ChangeSignal: @unchecked Sendable {
    typealias WakeUp = @Sendable () -> Void

    private let lock = NSLock()
    private var closed = false
    private var subscribers: [Int: WakeUp] = [:]
    private var nextToken = 0

    /// True once the daemon began shutting down.
    var isClosed: Bool { lock.withLock { closed } }

    /// Something was stored: every subscriber is woken.
    func bump() {
        for wakeUp in lock.withLock({ Array(subscribers.values) }) { wakeUp() }
    }

    /// Calls `wakeUp` after every `bump` and on `close` (at once when closed
    /// already), until `unsubscribe` with the returned token.
    func subscribe(_ wakeUp: @escaping WakeUp) -> Int {
        let (token, isClosed) = lock.withLock {
            nextToken += 1
            subscribers[nextToken] = wakeUp
            return (nextToken, closed)
        }
        if isClosed { wakeUp() }
        return token
    }

    func unsubscribe(_ token: Int) {
        lock.withLock { _ = subscribers.removeValue(forKey: token) }
    }

    /// Ends the change streams for good (shutdown): wakes every subscriber.
    func close() {
        let wakeUps = lock.withLock {
            closed = true
            return Array(subscribers.values)
        }
        for wakeUp in wakeUps { wakeUp() }
    }
}
