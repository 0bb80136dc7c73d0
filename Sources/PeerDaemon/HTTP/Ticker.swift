import Foundation

/// A dedicated thread that calls `action` every `interval` until stopped:
/// the HTTP server's once-a-second look at its waiting streams.
///
/// ```swift
/// let ticker = Ticker(every: 1, name: "peerd-http-tick") { print("tick") }
/// ticker.stop()
/// ```
///
/// `@unchecked Sendable`: `stopped` is only touched with `condition` held.
final class Ticker: @unchecked Sendable {
    private let condition = NSCondition()
    private var stopped = false

    init(every interval: TimeInterval, name: String, _ action: @escaping @Sendable () -> Void) {
        let thread = Thread { [self] in
            while wait(interval) { action() }
        }
        thread.name = name
        thread.start()
    }

    /// Ends the thread at once (it may finish a tick that is running).
    func stop() {
        condition.withLock {
            stopped = true
            condition.broadcast()
        }
    }

    /// Waits `interval`; false once stopped.
    private func wait(_ interval: TimeInterval) -> Bool {
        let deadline = Date(timeIntervalSinceNow: interval)
        return condition.withLock {
            while !stopped && condition.wait(until: deadline) {}
            return !stopped
        }
    }
}
