import Replica
import Synchronization

/// A wall clock that only moves when a test moves it.
final class ManualClock: Sendable {
    private let nowMs: Mutex<Int64>

    init(_ startMs: Int64) {
        nowMs = Mutex(startMs)
    }

    /// The current reading, in milliseconds since 1970.
    var now: Int64 { nowMs.withLock { $0 } }

    func set(_ ms: Int64) {
        nowMs.withLock { $0 = ms }
    }

    func advance(by ms: Int64) {
        nowMs.withLock { $0 += ms }
    }
}

extension EventLog.Options {
    /// Test options: the wall clock is `clock`, commits skip the fsync (the
    /// files are thrown away), everything else is the production default.
    static func testing(clock: ManualClock, undoLimit: Int = 10) -> EventLog.Options {
        var options = EventLog.Options()
        options.wallClock = { clock.now }
        options.durability = .normal
        options.undoLimit = undoLimit
        return options
    }
}
