import Replica
import SyncProtocol
import Synchronization

/// The commits storage reported that the event loop has not taken yet.
/// While the loop is busy (a relay pushing to a thousand sessions), the
/// commits of that time wait here and reach the node as one change, so a
/// burst of writes goes to each session as one batch, not one per write;
/// an idle loop takes each commit at once.
///
/// ```swift
/// if inbox.add(change) { loop.execute { if let merged = inbox.take() { … } } }
/// ```
final class ChangeInbox: Sendable {
    /// Several commits as one.
    struct Merged {
        /// Each feed's highest head among them.
        var cursor = VectorCursor()
        /// Their stored events, in commit order.
        var committed: [Event] = []
        var signed: [SignedHead] = []
        var certificates: [Certificate] = []
        /// Another process committed without moving the cursor (it may have
        /// stored signatures of held runs).
        var storedElsewhere = false
    }

    private let waiting = Mutex<[StorageExecutor.Change]>([])

    /// Keeps `change`; true when the inbox was empty, so the caller has the
    /// loop `take` (a later `add` finds it waiting and needs no new turn).
    func add(_ change: StorageExecutor.Change) -> Bool {
        waiting.withLock { waiting in
            waiting.append(change)
            return waiting.count == 1
        }
    }

    /// Every change waiting, merged; nil when none.
    func take() -> Merged? {
        let changes = waiting.withLock { waiting in
            defer { waiting.removeAll(keepingCapacity: true) }
            return waiting
        }
        guard !changes.isEmpty else { return nil }
        var merged = Merged()
        for change in changes {
            for (feed, head) in change.cursor.heads where head > merged.cursor[feed] { merged.cursor[feed] = head }
            merged.committed += change.stored.lazy.map(\.event)
            merged.signed += change.signed
            merged.certificates += change.certificates
            if change.origin == .external && change.storedCount == 0 && change.certificates.isEmpty {
                merged.storedElsewhere = true
            }
        }
        return merged
    }
}
