import Replica
import TestSupport

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
