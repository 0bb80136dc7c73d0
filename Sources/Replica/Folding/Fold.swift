import Foundation

/// The folding rules every domain shares: canonical order, sessions, undo, poison.
enum Fold {
    /// An entity's history split for folding, each payload examined once.
    struct Resolution {
        /// The events the fold applies: neither undos nor undone, in canonical order.
        var effective: [Event] = []
        /// The domain events an undo cancelled: not applied, still checked for poison.
        var cancelled: [Event] = []
        /// The events another writer's session dropped: not applied, still checked for poison.
        var dropped: [DroppedEvent] = []
        /// Who holds the entity after its last event.
        var session = SessionState.free
    }

    /// Splits a history sorted in canonical order into what the fold applies,
    /// what sessions dropped and what undos cancelled; session events and
    /// undos themselves are in none. Sessions come first: an undo by a
    /// writer who does not hold the entity is dropped and cancels nothing.
    /// `start` is who held the entity before `history` (a checkpoint's
    /// holder, when the history is what follows it).
    static func resolve(inCanonicalOrder history: [Event], startingFrom start: SessionState = .free) -> Resolution {
        let sessions = SessionFold.resolve(inCanonicalOrder: history, startingFrom: start)
        let history = sessions.kept
        let undos = history.map { UndoneEvent.parse($0.payload) }
        let cancelledIDs = cancelledEventIDs(history, undos: undos)
        var resolution = Resolution(dropped: sessions.dropped, session: sessions.state)
        for (event, undo) in zip(history, undos) where undo == nil {
            if cancelledIDs.contains(event.eventID) {
                resolution.cancelled.append(event)
            } else {
                resolution.effective.append(event)
            }
        }
        return resolution
    }

    /// The history without the later copies of an event id that sits in
    /// more than one thin-client feed (one thin client that pushed the
    /// same event to two relays): the first copy in canonical order is the
    /// one folded, on every replica. Other feeds are left as they are.
    static func withoutRepeatedThinClientCopies(_ history: [Event]) -> [Event] {
        guard history.contains(where: { $0.feed.isThinClient }) else { return history }
        var seen: Set<UUID> = []
        return history.filter { !$0.feed.isThinClient || seen.insert($0.eventID).inserted }
    }

    /// The events that a kept `Undone` cancels, for an entity history sorted
    /// in canonical order. Walking from the newest event back, a kept undo
    /// cancels its target when the target sorts before it; an undo of an
    /// undo therefore restores the first target. An undo whose target is
    /// missing or sorts later cancels nothing.
    static func cancelledEventIDs(inCanonicalOrder history: [Event]) -> Set<UUID> {
        cancelledEventIDs(history, undos: history.map { UndoneEvent.parse($0.payload) })
    }

    /// As above, with each event's parsed undo (nil for other events) given.
    private static func cancelledEventIDs(_ history: [Event], undos: [UndoneEvent?]) -> Set<UUID> {
        var cancelled: Set<UUID> = []
        var indexByID: [UUID: Int] = [:]
        for (index, event) in history.enumerated() { indexByID[event.eventID] = index }
        for index in history.indices.reversed() {
            guard !cancelled.contains(history[index].eventID), let undo = undos[index] else { continue }
            if let targetIndex = indexByID[undo.eventID], targetIndex < index {
                cancelled.insert(undo.eventID)
            }
        }
        return cancelled
    }

    /// How many events at the end of a canonical history are undos.
    /// (Session events and the events a session dropped do not count.)
    static func trailingUndoCount(inCanonicalOrder history: [Event]) -> Int {
        var count = 0
        for event in SessionFold.resolve(inCanonicalOrder: history).kept.reversed() {
            guard UndoneEvent.parse(event.payload) != nil else { break }
            count += 1
        }
        return count
    }

    /// The newest event that an undo would cancel: not an undo, not cancelled.
    static func undoTarget(inCanonicalOrder history: [Event]) -> Event? {
        resolve(inCanonicalOrder: history).effective.last
    }
}
