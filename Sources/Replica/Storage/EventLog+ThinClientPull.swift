import Foundation

extension EventLog {
    /// Up to `limit` events stored after local offset `offset`, in arrival
    /// order, as a thin client that knows only the Item domain is served
    /// them (`GET /events`, docs/relay.md): item events with a UUID entity
    /// id whose payload is one of the five Item events, undos translated
    /// (``ThinClientView``), and of an event that sits in two thin-client
    /// feeds only the copy this node holds first. Events a session dropped
    /// (docs/sessions.md) and everything else are skipped and the page
    /// filled from later events, so an empty page means there is nothing
    /// more to serve.
    ///
    /// ```swift
    /// let page = try log.thinClientEvents(after: cursor, limit: 500)
    /// cursor = page.last?.offset ?? cursor
    /// ```
    ///
    /// A client whose `offset` lies before the history this log holds (it
    /// started from a checkpoint, or dropped what one covers) is served the
    /// checkpoint's state instead, as item events at the offset where that
    /// history ends (`checkpointItemEvents(at:)`), whatever `limit` says;
    /// it goes on from there.
    ///
    /// `types` names the entity types to serve (`GET /events?types=`): a
    /// client that knows declared domains (docs/domains.md) asks for them,
    /// and their events are served as stored, undos and all; `item` among
    /// them is served as above.
    ///
    /// With `fromCheckpoint`, a client whose `offset` lies before the
    /// checkpoint this log folds from is served that checkpoint's state the
    /// same way, at the offset of the newest event it covers, even where
    /// the history is still held: a new phone starts from the checkpoint
    /// instead of pulling every event (docs/relay.md).
    public func thinClientEvents(
        after offset: Int64, limit: Int, types: Set<String> = [Item.entityType], fromCheckpoint: Bool = false
    ) throws -> [StoredEvent] {
        guard limit > 0, !types.isEmpty else { return [] }
        let sortedTypes = types.sorted()
        let placeholders = sortedTypes.map { _ in "?" }.joined(separator: ",")
        return try read {
            // A cursor before the history held here gets the checkpoint's state, in one page.
            var floor = try historyOffset()
            if fromCheckpoint, let held = try checkpoint() {
                floor = max(floor, try newestOffset(coveredBy: held.content))
            }
            if offset < floor, types.contains(Item.entityType) {
                let state = try checkpointItemEvents(at: floor)
                if !state.isEmpty { return state }
            }
            let tail = try syncPending()
            var served: [StoredEvent] = []
            var scanned = offset
            let chunk = max(limit, 256)
            var dropped = DroppedIDs()
            while served.count < limit {
                // Blocks hold no thin-client feed (docs/storage.md "Block rows"): only rows need the index.
                let page = try storedEvents(
                    after: scanned, limit: chunk,
                    rowCondition: """
                        AND n.entity_type IN (\(placeholders))
                        AND (instr(f.replica_id, '@') = 0
                             OR e.local_offset = (SELECT local_offset FROM thin_client_recent WHERE event_id = e.event_id
                                                  UNION ALL
                                                  SELECT local_offset FROM thin_client_events WHERE event_id = e.event_id))
                        """, rowArguments: sortedTypes.map { .text($0) },
                    keep: { types.contains($0.stored.event.entityType) })
                guard let last = page.last else { break }
                scanned = last.stored.offset
                for row in page where served.count < limit {
                    if try dropped.contains(row, in: self, tail) { continue }
                    if row.stored.event.entityType != Item.entityType {
                        if SessionEvent.parse(row.stored.event.payload) == nil { served.append(row.stored) }
                        continue
                    }
                    if let event = try thinClientView(of: row.stored, in: tail) { served.append(event) }
                }
                if page.count < chunk { break }
            }
            return served
        }
    }

    /// Inside a transaction, after `syncPending()` (`tail`): the event as a
    /// thin client is served it, or nil when it is skipped.
    private func thinClientView(of stored: StoredEvent, in tail: SyncedTail) throws -> StoredEvent? {
        guard ThinClientView.isItemID(stored.event.entityID) else { return nil }
        if ThinClientView.isServedAsStored(stored.event) { return stored }
        guard UndoneEvent.parse(stored.event.payload) != nil else { return nil }
        let entity = EntityKey(type: Item.entityType, id: stored.event.entityID)
        let history = try entityHistory(entity, in: tail).map(\.event)
        let base = try entityRowID(entity, create: false).flatMap { try checkpointBase(entityRow: $0) }
        guard let served = ThinClientView.servedEvent(for: stored.event, inCanonicalOrder: history, base: base) else {
            return nil
        }
        var translated = stored
        translated.event.payload = served.payload
        return translated
    }

    /// The events sessions dropped, per claimed entity, as far as one pull
    /// has looked: an entity never claimed costs one row read.
    private struct DroppedIDs {
        private var byEntity: [Int64: Set<UUID>] = [:]

        mutating func contains(_ row: InsertedEvent, in log: EventLog, _ tail: SyncedTail) throws -> Bool {
            if let ids = byEntity[row.entityRow] { return ids.contains(row.stored.event.eventID) }
            let claimed = try log.db.cached("SELECT claimed FROM entities WHERE id = ?")
            try claimed.bind([.int(row.entityRow)])
            var ids: Set<UUID> = []
            if try claimed.step(), claimed.int64(0) != 0 {
                let entity = EntityKey(type: row.stored.event.entityType, id: row.stored.event.entityID)
                ids = Set(try log.session(of: entity, in: tail).dropped.map(\.event.eventID))
            }
            claimed.reset()
            byEntity[row.entityRow] = ids
            return ids.contains(row.stored.event.eventID)
        }
    }
}
