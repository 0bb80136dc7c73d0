import Synchronization

/// A wall clock that only moves when a test moves it, for code that takes
/// "now" as a `@Sendable () -> Int64` of milliseconds since 1970.
///
/// ```swift
/// let clock = ManualClock(1_000)
/// var options = EventLog.Options()
/// options.wallClock = { clock.now }
/// clock.advance(by: 250)   // or clock.set(5_000)
/// ```
public final class ManualClock: Sendable {
    private let nowMs: Mutex<Int64>

    /// A clock that reads `startMs` until it is moved; by default 2023-11-14, a plausible present.
    public init(_ startMs: Int64 = 1_700_000_000_000) {
        nowMs = Mutex(startMs)
    }

    /// The current reading, in milliseconds since 1970.
    public var now: Int64 { nowMs.withLock { $0 } }

    /// Sets the reading, forwards or backwards (a device clock that was corrected).
    public func set(_ ms: Int64) {
        nowMs.withLock { $0 = ms }
    }

    /// Moves the reading by `ms` (negative moves it back).
    public func advance(by ms: Int64) {
        nowMs.withLock { $0 += ms }
    }
}
