import Replica
import SyncProtocol

extension SyncNode {
    /// True when `localState` describes the log as this node last read it:
    /// the same cursor, and no commit by another process since.
    var localStateIsCurrent: Bool {
        localState?.cursor == cursor && localStateExternalChange == lastExternalChange
    }

    /// Hashes the log again when it changed since the last summary: its
    /// cursor moved, or another process committed. A summary read while
    /// another process committed is dropped (the next round reads again),
    /// so `localState` always matches its cursor.
    func refreshLocalState() {
        if localStateIsCurrent { return }
        do {
            let hex = try log.stateHash()
            let count = try log.eventCount()
            guard try log.externalChangeCounter() == lastExternalChange, let hash = StateHash(hex: hex) else { return }
            localState = StateReport(summary: StateSummary(eventCount: count, hash: hash), cursor: cursor)
            localStateExternalChange = lastExternalChange
        } catch {
            emit(LogRecord(.error, "cannot hash the state", [("error", "\(error)")]))
        }
    }

    /// A catch-up leaves projection rows pending in memory (reads fold them
    /// in anyway); once the log has been quiet for a round they are written,
    /// so that `sqlite3` readers of the file see the latest state too.
    func writePendingProjections() {
        do {
            try log.writePendingProjections()
        } catch {
            emit(LogRecord(.error, "cannot write projections", [("error", "\(error)")]))
        }
    }
}
