import Foundation

extension EventLog {
    /// Appends one event to this replica's feed and folds it. Returns only
    /// after the commit (durable per `Options.durability`).
    ///
    /// With an `idempotencyKey`, a repeat of the same key returns the event
    /// the first call stored and appends nothing.
    @discardableResult
    public func append(_ new: NewEvent, idempotencyKey: String? = nil) throws -> StoredEvent {
        try write {
            let tail = try syncPending()
            return try once(idempotencyKey) { try appendInTransaction([new], in: tail)[0] }
        }
    }

    /// Appends several events in one transaction and one commit.
    @discardableResult
    public func append(_ batch: [NewEvent]) throws -> [StoredEvent] {
        guard !batch.isEmpty else { return [] }
        return try write {
            let tail = try syncPending()
            return try appendInTransaction(batch, in: tail)
        }
    }

    /// Appends an `Undone` for the newest event of the entity that is not
    /// already undone, refusing past `Options.undoLimit` undos in a row.
    /// An `idempotencyKey` works as for `append`.
    @discardableResult
    public func undo(
        entityType: String, entityID: String, scope: String = FeedID.defaultScope, idempotencyKey: String? = nil
    ) throws -> StoredEvent {
        try write {
            let tail = try syncPending()
            return try once(idempotencyKey) {
                let history = try entityHistory(EntityKey(type: entityType, id: entityID), in: tail).map(\.event)
                guard let target = Fold.undoTarget(inCanonicalOrder: history) else {
                    throw EventLogError.nothingToUndo(entityType: entityType, entityID: entityID)
                }
                let undo = NewEvent(
                    entityType: entityType, entityID: entityID,
                    payload: CanonicalJSON.text(of: UndoneEvent(eventID: target.eventID)), scope: scope)
                return try appendInTransaction([undo], in: tail)[0]
            }
        }
    }

    /// Inside a write transaction: the event an earlier call with the same
    /// `idempotencyKey` stored, else `body`'s event, recorded under the key.
    private func once(_ idempotencyKey: String?, _ body: () throws -> StoredEvent) throws -> StoredEvent {
        guard let idempotencyKey else { return try body() }
        if let earlier = try eventForIdempotencyKey(idempotencyKey) { return earlier }
        let stored = try body()
        try db.cached("INSERT INTO idempotency_keys (key, local_offset) VALUES (?, ?)")
            .run([.text(idempotencyKey), .int(stored.offset)])
        return stored
    }

    /// Inside a write transaction, after `syncPending()` (`tail`): appends `batch` to
    /// this replica's feeds and folds it. Session events are appended only
    /// by the session calls, which pass `sessionNotBeforeMs` (the time
    /// after every event of the entity they saw); every other event of an
    /// entity another writer holds is refused.
    func appendInTransaction(
        _ batch: [NewEvent], sessionNotBeforeMs: Int64? = nil, declaring: Bool = false, in tail: SyncedTail
    ) throws -> [StoredEvent] {
        let sessionEvents = sessionNotBeforeMs != nil
        var clock = try storedClock()
        var heads: [FeedID: FeedHead] = [:]
        var inserted: [InsertedEvent] = []
        inserted.reserveCapacity(batch.count)
        let wallMs = options.wallClock()
        let arrivalMs = try arrivalTime(wallMs: wallMs)
        for new in batch {
            let (payload, notBeforeMs) = try validated(
                new, sessionEvent: sessionEvents, declaring: declaring, in: tail)
            let feed = FeedID(replicaID: replicaID, scope: new.scope)
            if heads[feed] == nil { heads[feed] = try feedHead(of: feed) }
            let feedRow = heads[feed]!.row
            let event = Event(
                eventID: options.eventIDs(), feed: feed, seq: heads[feed]!.seq + 1,
                timeMs: max(clock.tick(wallMs: wallMs), notBeforeMs, sessionNotBeforeMs ?? Int64.min),
                entityType: new.entityType, entityID: new.entityID, payload: payload)
            let entity = EntityKey(type: new.entityType, id: new.entityID)
            let entityRow = try entityRowID(entity, create: true)!
            if !sessionEvents { try checkHolder(of: entity, entityRow: entityRow, in: tail) }
            var asRow: BlockBuilder?
            inserted.append(
                try storeEvent(
                    event, feedRow: feedRow, entityRow: entityRow, arrivalMs: arrivalMs, into: &asRow, in: tail))
            heads[feed]!.extend(with: event)
            try signPointIfDue(heads[feed]!)
        }
        try finishOwn(heads)
        try storeClock(clock)
        try foldInserted(inserted, batchSize: batch.count, in: tail)
        return inserted.map(\.stored)
    }

    /// Checks a local event against the event model and its domain; returns
    /// the canonical payload and the earliest time the event may carry.
    ///
    /// An undo must sort after its target to cancel it. A target from a clock
    /// far ahead (which the local clock does not follow) would sort after
    /// the undo, so the undo takes at least the target's time + 1; the local
    /// clock itself is not moved.
    private func validated(
        _ new: NewEvent, sessionEvent: Bool, declaring: Bool, in tail: SyncedTail
    ) throws -> (payload: String, notBeforeMs: Int64) {
        guard !new.entityType.isEmpty, !new.entityID.isEmpty, !new.scope.isEmpty else {
            throw EventLogError.invalidEvent("entity_type, entity_id and scope must not be empty")
        }
        if (new.entityType == DeclarationEvent.entityType) != declaring {
            throw EventLogError.invalidEvent(
                "\(DeclarationEvent.entityType) events are declarations: declare the domain instead (docs/domains.md)")
        }
        let payload: JSONValue
        do {
            payload = try JSONValue.parse(new.payload)
        } catch {
            throw EventLogError.invalidEvent("payload is not JSON: \(DecodingFailure(error))")
        }
        guard case .object = payload else { throw EventLogError.invalidEvent("payload must be a JSON object") }
        let canonical = payload.canonicalText
        if let type = payload["type"]?.stringValue, SessionEvent.types.contains(type) != sessionEvent {
            throw EventLogError.invalidEvent(
                sessionEvent
                    ? "\(type) is not a session event"
                    : "\(type) is a session event: claim and release entities instead (docs/sessions.md)")
        }
        if sessionEvent { return (canonical, Int64.min) }  // the session call says how late
        if let declared = domains[new.entityType]?.plan?.declaration.scope, new.scope != declared {
            throw EventLogError.wrongScope(entityType: new.entityType, declared: declared, given: new.scope)
        }
        if payload["type"]?.stringValue == UndoneEvent.type {
            let target = try validateUndo(payload, of: EntityKey(type: new.entityType, id: new.entityID), in: tail)
            return (canonical, target.timeMs &+ 1)
        }
        if let domain = domains[new.entityType] { try domain.validatePayload(payload) }
        return (canonical, Int64.min)
    }

    /// Checks an undo and returns its target.
    private func validateUndo(_ payload: JSONValue, of entity: EntityKey, in tail: SyncedTail) throws -> Event {
        guard let undo = try? JSONValueDecoder.decode(UndoneEvent.self, from: payload) else {
            throw EventLogError.invalidEvent("an Undone event needs an event_id")
        }
        let history = try entityHistory(entity, in: tail).map(\.event)
        guard let target = history.first(where: { $0.eventID == undo.eventID }),
            SessionEvent.parse(target.payload) == nil
        else {
            throw EventLogError.invalidEvent(
                "\(entity.type) \(entity.id) has no event \(undo.eventID.lowercased) to undo")
        }
        if Fold.trailingUndoCount(inCanonicalOrder: history) >= options.undoLimit {
            throw EventLogError.undoLimitReached(entityType: entity.type, entityID: entity.id, limit: options.undoLimit)
        }
        return target
    }

    /// Inside a transaction, after `syncPending()` (`tail`): every event of
    /// one entity, in canonical order.
    func entityHistory(_ entity: EntityKey, in tail: SyncedTail) throws -> [StoredEvent] {
        guard let row = try entityRowID(entity, create: false), let head = try chainHead(entityRow: row, in: tail)
        else {
            return []
        }
        return try entityHistory(head: head)
    }

    private func eventForIdempotencyKey(_ key: String) throws -> StoredEvent? {
        try storedEvents(
            "WHERE e.local_offset = (SELECT local_offset FROM idempotency_keys WHERE key = ?)", [.text(key)]
        ).first
    }
}
