/// A hybrid logical clock: local times follow the wall clock but always
/// move past every time already seen, so an edit made after seeing another
/// edit sorts after it even when this device's clock is behind.
///
/// Pure value: the wall-clock reading is passed in.
public struct HybridClock: Sendable, Equatable {
    /// The highest time issued or accepted from a peer.
    public private(set) var lastMs: Int64
    /// Remote times further than this ahead of the wall clock do not move the clock.
    public let maxSkewMs: Int64

    /// Default tolerated skew: 24 hours.
    public static let defaultMaxSkewMs: Int64 = 24 * 60 * 60 * 1000

    public init(lastMs: Int64 = 0, maxSkewMs: Int64 = HybridClock.defaultMaxSkewMs) {
        self.lastMs = lastMs
        self.maxSkewMs = maxSkewMs
    }

    /// The time for a new local event: `max(wall, last + 1)`.
    public mutating func tick(wallMs: Int64) -> Int64 {
        lastMs = max(wallMs, lastMs + 1)
        return lastMs
    }

    /// Takes a remote event's time into account. Returns how far the time is
    /// ahead of the wall clock beyond the tolerated skew (0 when within it);
    /// such a time is stored and folded but does not drag the clock forward.
    @discardableResult
    public mutating func observe(remoteMs: Int64, wallMs: Int64) -> Int64 {
        let (ahead, overflow) = remoteMs.subtractingReportingOverflow(wallMs)
        if overflow { return remoteMs > wallMs ? Int64.max : 0 }
        if ahead > maxSkewMs { return ahead }
        lastMs = max(lastMs, remoteMs)
        return 0
    }
}
