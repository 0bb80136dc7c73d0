import Foundation

/// The folding rules every domain shares: canonical order, undo, poison.
enum Fold {
    /// The events that a kept `Undone` cancels, for an entity history sorted
    /// in canonical order. Walking from the newest event back, a kept undo
    /// cancels its target when the target sorts before it; an undo of an
    /// undo therefore restores the first target. An undo whose target is
    /// missing or sorts later cancels nothing.
    static func cancelledEventIDs(inCanonicalOrder history: [Event]) -> Set<UUID> {
        var cancelled: Set<UUID> = []
        var indexByID: [UUID: Int] = [:]
        for (index, event) in history.enumerated() { indexByID[event.eventID] = index }
        for (index, event) in history.enumerated().reversed() {
            guard !cancelled.contains(event.eventID), let undo = UndoneEvent.parse(event.payload) else {
                continue
            }
            if let targetIndex = indexByID[undo.eventID], targetIndex < index {
                cancelled.insert(undo.eventID)
            }
        }
        return cancelled
    }

    /// How many events at the end of a canonical history are undos.
    static func trailingUndoCount(inCanonicalOrder history: [Event]) -> Int {
        var count = 0
        for event in history.reversed() {
            guard UndoneEvent.parse(event.payload) != nil else { break }
            count += 1
        }
        return count
    }

    /// The newest event that an undo would cancel: not an undo, not cancelled.
    static func undoTarget(inCanonicalOrder history: [Event]) -> Event? {
        let cancelled = cancelledEventIDs(inCanonicalOrder: history)
        return history.last { event in
            !cancelled.contains(event.eventID) && UndoneEvent.parse(event.payload) == nil
        }
    }
}
