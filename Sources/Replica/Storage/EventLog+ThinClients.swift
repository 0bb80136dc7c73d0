import Foundation

extension EventLog {
    /// Stores a thin client's batch in one transaction and returns one
    /// stored event per input, in input order (docs/relay.md).
    ///
    /// Every event is checked first; one that does not fit (an empty id, a
    /// payload that is not a JSON object or that its domain does not know,
    /// an undo) refuses the whole batch with a ``ThinClientBatchError``
    /// naming it, and nothing is stored. An event id this node already holds
    /// in a thin-client feed (a retried push, also one that reached this
    /// node through another relay), or that repeats within the batch, is
    /// answered with the copy held and stored nothing twice. New events go
    /// to the client's feed on this node, `<client>@<node>`, numbered in
    /// arrival order; their time is the client's.
    @discardableResult
    public func acceptThinClientEvents(_ batch: [ThinClientEvent]) throws -> [StoredEvent] {
        guard !batch.isEmpty else { return [] }
        return try write {
            let tail = try syncPending()
            let heldClock = try storedClock()
            var clock = heldClock
            let wallMs = options.wallClock()
            let arrivalMs = try arrivalTime(wallMs: wallMs)
            var heads: [FeedID: FeedHead] = [:]
            var byID: [UUID: StoredEvent] = [:]
            var inserted: [InsertedEvent] = []
            var answers: [StoredEvent] = []
            answers.reserveCapacity(batch.count)
            for (index, given) in batch.enumerated() {
                // A retry is answered with the copy held, whatever the declarations say now.
                if let held = try byID[given.eventID] ?? thinClientCopy(of: given.eventID) {
                    byID[given.eventID] = held
                    answers.append(held)
                    continue
                }
                // Checked against the declarations as this transaction holds them; a refusal rolls the batch back.
                let pushed: ThinClientEvent
                do {
                    pushed = try checkedThinClientEvent(given)
                } catch let error as ThinClientBatchError {
                    throw ThinClientBatchError(index: index, reason: error.reason, wrongScope: error.wrongScope)
                }
                let feed = FeedID(thinClient: pushed.clientReplicaID, node: replicaID, scope: pushed.scope)
                if heads[feed] == nil { heads[feed] = try feedHead(of: feed) }
                let feedRow = heads[feed]!.row
                let event = Event(
                    eventID: pushed.eventID, feed: feed, seq: heads[feed]!.seq + 1, timeMs: pushed.timeMs,
                    entityType: pushed.entityType, entityID: pushed.entityID, payload: pushed.payload)
                let entityRow = try entityRowID(EntityKey(type: event.entityType, id: event.entityID), create: true)!
                var asRow: BlockBuilder?
                let stored = try storeEvent(
                    event, feedRow: feedRow, entityRow: entityRow, arrivalMs: arrivalMs, into: &asRow, in: tail)
                heads[feed]!.extend(with: event)
                try signPointIfDue(heads[feed]!)
                _ = clock.observe(remoteMs: event.timeMs, wallMs: wallMs)
                inserted.append(stored)
                byID[pushed.eventID] = stored.stored
                answers.append(stored.stored)
            }
            try finishOwn(heads)
            if clock != heldClock { try storeClock(clock) }
            if !inserted.isEmpty { try foldInserted(inserted, batchSize: inserted.count, in: tail) }
            return answers
        }
    }

    /// The event with its payload in canonical form, or why it is refused.
    private func checkedThinClientEvent(_ event: ThinClientEvent) throws -> ThinClientEvent {
        func refuse(_ reason: String) -> ThinClientBatchError { ThinClientBatchError(index: 0, reason: reason) }
        guard !event.clientReplicaID.isEmpty else { throw refuse("replica_id must not be empty") }
        guard !event.scope.isEmpty else { throw refuse("scope must not be empty") }
        guard !event.entityType.isEmpty, !event.entityID.isEmpty else {
            throw refuse("entity_type and entity_id must not be empty")
        }
        guard event.entityType != DeclarationEvent.entityType else {
            throw refuse("a thin client cannot declare a domain (\(DeclarationEvent.entityType))")
        }
        let domain = domains[event.entityType]
        if let declared = domain?.plan?.declaration.scope, event.scope != declared {
            let error = EventLogError.wrongScope(entityType: event.entityType, declared: declared, given: event.scope)
            throw ThinClientBatchError(index: 0, reason: error.description, wrongScope: true)
        }
        // A canonical payload its Swift domain's fast path decodes needs no parse (the API hands
        // over canonical text); a declared domain checks strictly, undeclared fields included.
        if domain?.plan == nil, CanonicalForm.isCanonicalObject(event.payload), UndoneEvent.parse(event.payload) == nil,
            domain.map({ $0.decodesStoredEvent(event.payload) }) ?? true
        {
            return event
        }
        guard let payload = try? JSONValue.parse(event.payload), case .object = payload else {
            throw refuse("payload must be a JSON object")
        }
        if payload["type"]?.stringValue == UndoneEvent.type {
            throw refuse("a thin client cannot push an Undone event")
        }
        if let domain = domains[event.entityType] {
            do {
                try domain.validatePayload(payload)
            } catch EventLogError.invalidEvent(let reason) {
                throw refuse(reason)
            }
        }
        var canonical = event
        canonical.payload = payload.canonicalText
        return canonical
    }

    /// Inside a transaction: the copy of a thin client's event this node
    /// holds (the first that arrived), if any.
    func thinClientCopy(of eventID: UUID) throws -> StoredEvent? {
        // Most pushed events are new: a lookup in the index alone says so.
        guard let offset = try thinClientOffset(of: eventID) else { return nil }
        return try storedEvent(at: offset)?.stored
    }

    /// Inside a transaction: true for a thin-client event stored at
    /// `stored.offset` when another copy of it came first to this node.
    func isRepeatedThinClientCopy(_ stored: StoredEvent) throws -> Bool {
        guard stored.event.feed.isThinClient, let first = try thinClientOffset(of: stored.event.eventID) else {
            return false
        }
        return first != stored.offset
    }
}
