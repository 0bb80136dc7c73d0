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

    /// Inside a transaction: the local offset of the newest event held that
    /// `content` covers (0 for none held): within a feed offsets grow with
    /// seq, so it is the offset of each feed's covered head, a row or in a block.
    func newestOffset(coveredBy content: CheckpointContent) throws -> Int64 {
        var newest: Int64 = 0
        for (feed, seq) in content.cursor.heads {
            guard let row = try feedRowID(feed, create: false) else { continue }
            let at = try db.scalarInt(
                """
                SELECT coalesce((SELECT local_offset FROM events WHERE feed = ?1 AND seq = ?2),
                                (SELECT first_offset + (?2 - first_seq) FROM event_blocks
                                 WHERE feed = ?1 AND first_seq <= ?2 AND last_seq >= ?2), 0)
                """, [.int(row), .int(Int64(seq))])
            newest = max(newest, at ?? 0)
        }
        return newest
    }

    /// Inside a write transaction: raises `history_offset` to `offset`.
    func raiseHistoryOffset(to offset: Int64) throws {
        guard offset > (try historyOffset()) else { return }
        try db.cached("INSERT OR REPLACE INTO meta (key, value) VALUES ('history_offset', ?)").run([.text("\(offset)")])
    }

    /// Inside a transaction: the state of every item at the history offset
    /// `offset`, as the events a thin client that knows only items folds
    /// it from (`Created`, then `NoteChanged` for a note and `Deleted` for
    /// a deleted item), all at server offset `offset`: its checkpoint base
    /// with the events stored at or below `offset` that the checkpoint does
    /// not cover folded on top (a client goes on after `offset`, so it would
    /// never see those). Their event ids are derived from the checkpoint
    /// and the item, so the same state is the same events however often it
    /// is served.
    func checkpointItemEvents(at offset: Int64) throws -> [StoredEvent] {
        guard let held = try checkpoint(), let domain = domains[Item.entityType] else { return [] }
        let early = try uncoveredItemEvents(through: offset)
        var bases: [String: EntityBase] = [:]
        var after: (type: String, id: String)? = (Item.entityType, "")
        while true {
            let page = try checkpointBases(after: after, limit: 2_000)
            for base in page where base.entityType == Item.entityType && ThinClientView.isItemID(base.entityID) {
                bases[base.entityID] = base
            }
            guard page.count == 2_000, let last = page.last, last.entityType == Item.entityType else { break }
            after = (last.entityType, last.entityID)
        }
        var events: [StoredEvent] = []
        for id in Set(bases.keys).union(early.keys).sorted() {
            let start = bases[id]
            let folded =
                early[id].map {
                    EventLog.base(entityType: Item.entityType, entityID: id, domain: domain, start: start, afterIt: $0)
                } ?? start
            guard let folded, let state = folded.state,
                let item = Item(storedState: state) ?? (try? CanonicalJSON.decode(Item.self, from: state))
            else { continue }
            var served: [ItemEvent] = [.created(name: item.name, quantity: item.quantity)]
            if let note = item.note { served.append(.noteChanged(note: note)) }
            if item.deleted { served.append(.deleted) }
            for (index, itemEvent) in served.enumerated() {
                var eventID = SHA256()
                eventID.update(held.content.id)
                eventID.update(id)
                eventID.update([UInt8(index)])
                let event = Event(
                    eventID: UUID(bytes: Array(eventID.finalize().prefix(16)))!,
                    feed: FeedID(replicaID: held.content.madeBy), seq: folded.lastKey.seq,
                    timeMs: folded.lastKey.timeMs, entityType: Item.entityType, entityID: id,
                    payload: itemEvent.payload)
                events.append(StoredEvent(event: event, offset: offset, arrivalTimeMs: held.takenMs))
            }
        }
        return events
    }

    /// Inside a transaction: the item events stored at or below `offset`
    /// that the checkpoint the fold starts from does not cover (events that
    /// arrived before some it covers), per item in canonical order. Each
    /// feed is read from the first seq the checkpoint does not cover until
    /// its events pass `offset` (offsets grow with seq within a feed).
    private func uncoveredItemEvents(through offset: Int64) throws -> [String: [Event]] {
        var found: [String: [Event]] = [:]
        for (feed, head) in try cursor().heads where head > covered.cursor[feed] {
            guard let row = try feedRowID(feed, create: false) else { continue }
            var next = covered.cursor[feed] + 1
            reading: while next <= head {
                let page = try feedEvents(feedRow: row, seqs: next...head, limit: 1_024)
                guard let last = page.last else { break }
                for inserted in page {
                    guard inserted.stored.offset <= offset else { break reading }
                    let event = inserted.stored.event
                    guard event.entityType == Item.entityType, ThinClientView.isItemID(event.entityID) else { continue }
                    found[event.entityID, default: []].append(event)
                }
                next = last.stored.event.seq + 1
            }
        }
        return found.mapValues { $0.sorted { $0.orderKey < $1.orderKey } }
    }
}
