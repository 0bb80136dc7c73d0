import Foundation

/// What a thin client is served when its cursor points before the history
/// this log holds (docs/relay.md "Checkpoints and thin clients").
extension EventLog {
    /// Inside a transaction: the server offset at and below which this log
    /// holds nothing a thin client could be served, 0 while it holds all
    /// its history. A log that started from a checkpoint reserves offset 1
    /// for the checkpoint's state; one that dropped its history, the
    /// highest offset it dropped. New events never take these offsets.
    func historyOffset() throws -> Int64 {
        // Read at every write's first offset: a cached statement, not a fresh prepare.
        let statement = try db.cached("SELECT value FROM meta WHERE key = 'history_offset'")
        defer { statement.reset() }
        return try statement.step() ? Int64(statement.text(0)) ?? 0 : 0
    }

    /// Inside a write transaction: raises `history_offset` to `offset`.
    func raiseHistoryOffset(to offset: Int64) throws {
        guard offset > (try historyOffset()) else { return }
        try db.cached("INSERT OR REPLACE INTO meta (key, value) VALUES ('history_offset', ?)").run([.text("\(offset)")])
    }

    /// Inside a transaction: the state of every item of the checkpoint this
    /// log folds from, as the events a thin client that knows only items
    /// folds it from (`Created`, then `NoteChanged` for a note and `Deleted`
    /// for a deleted item), all at server offset `offset`. Their event ids
    /// are derived from the checkpoint and the item, so the same state is
    /// the same events however often it is served.
    func checkpointItemEvents(at offset: Int64) throws -> [StoredEvent] {
        guard let held = try checkpoint() else { return [] }
        var events: [StoredEvent] = []
        var after: (type: String, id: String)? = (Item.entityType, "")
        while true {
            let page = try checkpointBases(after: after, limit: 2_000)
            for base in page where base.entityType == Item.entityType && ThinClientView.isItemID(base.entityID) {
                guard let state = base.state,
                    let item = Item(storedState: state) ?? (try? CanonicalJSON.decode(Item.self, from: state))
                else { continue }
                var served: [ItemEvent] = [.created(name: item.name, quantity: item.quantity)]
                if let note = item.note { served.append(.noteChanged(note: note)) }
                if item.deleted { served.append(.deleted) }
                for (index, itemEvent) in served.enumerated() {
                    var id = SHA256()
                    id.update(held.content.id)
                    id.update(base.entityID)
                    id.update([UInt8(index)])
                    let event = Event(
                        eventID: UUID(bytes: Array(id.finalize().prefix(16)))!,
                        feed: FeedID(replicaID: held.content.madeBy), seq: base.lastKey.seq,
                        timeMs: base.lastKey.timeMs, entityType: Item.entityType, entityID: base.entityID,
                        payload: itemEvent.payload)
                    events.append(StoredEvent(event: event, offset: offset, arrivalTimeMs: held.takenMs))
                }
            }
            guard page.count == 2_000, let last = page.last, last.entityType == Item.entityType else { break }
            after = (last.entityType, last.entityID)
        }
        return events
    }
}
