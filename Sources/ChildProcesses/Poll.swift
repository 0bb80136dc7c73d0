import Foundation

/// Waiting with a deadline for what another process does when nothing
/// can be awaited: a line in a log file it writes, a database it fills, a
/// status it reports. Never a fixed sleep: the wait ends as soon as the
/// condition holds.
///
/// ```swift
/// let converged = Poll.until(timeout: .seconds(30)) { try statuses().allEqual }
/// try await Poll.eventually("b finds a", timeout: .seconds(15)) { b.hasFound(a.replicaID) }
/// ```
public enum Poll {
    /// Checks `condition` every `interval` until it holds (true) or
    /// `timeout` has passed (false), blocking the calling thread.
    public static func until(
        timeout: Duration, every interval: Duration = .milliseconds(10), _ condition: () throws -> Bool
    ) rethrows -> Bool {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while true {
            if try condition() { return true }
            if ContinuousClock.now >= deadline { return false }
            Thread.sleep(forTimeInterval: interval.timeInterval)
        }
    }

    /// Checks `condition` every `interval` until it holds and returns how
    /// long that took; throws ``TimedOut`` (with `details()`, e.g. the logs
    /// of the processes involved) when `timeout` passes first.
    @discardableResult
    public static func eventually(
        _ what: String, timeout: Duration = .seconds(30), every interval: Duration = .milliseconds(20),
        details: () -> String = { "" }, _ condition: () async throws -> Bool
    ) async throws -> Duration {
        let start = ContinuousClock.now
        while try await !condition() {
            guard ContinuousClock.now < start.advanced(by: timeout) else {
                throw TimedOut(what: what, timeout: timeout, details: details())
            }
            try await Task.sleep(for: interval)
        }
        return start.duration(to: .now)
    }
}

/// A condition did not hold before its deadline.
public struct TimedOut: Error, CustomStringConvertible {
    /// What was waited for, e.g. `b finds a`.
    public var what: String
    public var timeout: Duration
    /// What may say why, e.g. the logs of the processes involved.
    public var details: String

    /// A wait for `what` that ended at `timeout`; `details` may say why.
    public init(what: String, timeout: Duration, details: String = "") {
        self.what = what
        self.timeout = timeout
        self.details = details
    }

    public var description: String { "timed out after \(timeout) waiting for \(what)\n\(details)" }
}
