import Foundation

/// Wall time in milliseconds since 1970, as one replica reads it: the one
/// place that reads the system clock. A daemon makes one and hands it to
/// everything that needs the time (its log, trust checks, claim grants,
/// health); tests and simulations inject their own.
///
/// ```swift
/// let clock = WallClock.system.offset(by: 7_200_000)   // two hours ahead
/// options.wallClock = clock.nowMs                      // EventLog.Options
/// ```
public struct WallClock: Sendable {
    /// Now, in milliseconds since 1970.
    public let nowMs: @Sendable () -> Int64

    public init(_ nowMs: @escaping @Sendable () -> Int64) {
        self.nowMs = nowMs
    }

    /// The system's clock.
    public static let system = WallClock { Int64(Date().timeIntervalSince1970 * 1000) }

    /// This clock moved by `ms` (a device whose clock is off).
    public func offset(by ms: Int64) -> WallClock {
        guard ms != 0 else { return self }
        let base = nowMs
        return WallClock { base() + ms }
    }
}
