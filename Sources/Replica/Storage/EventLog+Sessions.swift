import Foundation

/// Single-writer sessions (docs/sessions.md): claim an entity, take it
/// over, release it, and read what sessions dropped.
///
/// ```swift
/// try log.claim(entityType: "item", entityID: "match-7")
/// try log.append(NewEvent(item: "match-7", .renamed(name: "3:2")))   // refused while another holds it
/// let dropped = try log.session(entityType: "item", entityID: "match-7").dropped
/// ```
extension EventLog {
    /// What sessions decided for one entity, as this replica holds it.
    public func session(entityType: String, entityID: String) throws -> EntitySession {
        try read {
            let tail = try syncPending()
            return try session(of: EntityKey(type: entityType, id: entityID), in: tail)
        }
    }

    /// Claims an entity optimistically (no relay): appends a `Claimed`. A
    /// claim of an entity this replica holds appends nothing and returns
    /// the standing claim. Another's claim is taken over only with
    /// `takeover`, and never a relay's grant (which needs a relay).
    @discardableResult
    public func claim(
        entityType: String, entityID: String, takeover: Bool = false, scope: String = FeedID.defaultScope
    ) throws -> StoredEvent {
        try write {
            let tail = try syncPending()
            let entity = EntityKey(type: entityType, id: entityID)
            let (state, history) = try claimableState(of: entity, takeover: takeover, throughRelay: false, in: tail)
            if state.holder.map({ $0.hasSameUTF8(as: replicaID) }) == true,
                let standing = history.first(where: { $0.event.eventID == state.claim })
            {
                return standing
            }
            return try appendSessionEvent(
                .claimed(after: state.claim), to: entity, after: history, scope: scope, in: tail)
        }
    }

    /// Asks the relays for a claim: appends a `ClaimRequested` naming the
    /// claim it takes over. The answer arrives as a relay's `ClaimGranted`
    /// or `ClaimRefused` (`session(...).request(id)`).
    @discardableResult
    public func requestClaim(
        entityType: String, entityID: String, takeover: Bool = false, scope: String = FeedID.defaultScope
    ) throws -> StoredEvent {
        try write {
            let tail = try syncPending()
            let entity = EntityKey(type: entityType, id: entityID)
            let (state, history) = try claimableState(of: entity, takeover: takeover, throughRelay: true, in: tail)
            return try appendSessionEvent(
                .claimRequested(after: state.claim), to: entity, after: history, scope: scope, in: tail)
        }
    }

    /// A relay's answer to a claim request: a `ClaimGranted` when the entity
    /// is free, the requester's, or held by exactly the claim the request
    /// names, else a `ClaimRefused` naming the holder; with `expired`, a
    /// `ClaimRefused` naming no one (the request waited too long). Nil when
    /// the request is answered already (by any relay) or is not a request.
    @discardableResult
    public func answerClaimRequest(_ request: Event, expired: Bool = false) throws -> StoredEvent? {
        guard case .claimRequested(let after) = SessionEvent.parse(request.payload) else { return nil }
        return try write {
            let tail = try syncPending()
            let entity = EntityKey(type: request.entityType, id: request.entityID)
            let history = try entityHistory(entity, in: tail)
            let report = EntitySession(
                entityType: entity.type, entityID: entity.id, history: history.map(\.event))
            guard let held = report.request(request.eventID), held.answer == nil else { return nil }
            let state = report.state
            let requester = request.writer
            let answer: SessionEvent
            if expired {
                answer = .claimRefused(request: request.eventID, holder: nil)
            } else if let holder = state.holder, !holder.hasSameUTF8(as: requester), after != state.claim {
                answer = .claimRefused(request: request.eventID, holder: holder)
            } else {
                answer = .claimGranted(request: request.eventID, holder: requester, after: state.claim)
            }
            return try appendSessionEvent(answer, to: entity, after: history, scope: request.feed.scope, in: tail)
        }
    }

    /// Ends a session: by this replica when it holds the entity, or, with
    /// `force`, for whoever holds it (an operator's action for a lost device).
    @discardableResult
    public func release(
        entityType: String, entityID: String, force: Bool = false, scope: String = FeedID.defaultScope
    ) throws -> StoredEvent {
        try write {
            let tail = try syncPending()
            let entity = EntityKey(type: entityType, id: entityID)
            let (state, history) = try sessionState(of: entity, in: tail)
            guard let holder = state.holder else {
                throw EventLogError.notHeld(entityType: entityType, entityID: entityID, holder: nil)
            }
            let mine = holder.hasSameUTF8(as: replicaID)
            guard mine || force else {
                throw EventLogError.notHeld(entityType: entityType, entityID: entityID, holder: holder)
            }
            return try appendSessionEvent(
                .released(forcedHolder: mine ? nil : holder), to: entity, after: history, scope: scope, in: tail)
        }
    }

    /// The claim requests stored after local offset `offset`, in arrival
    /// order, at most `limit`: what a relay answers.
    public func claimRequests(after offset: Int64, limit: Int) throws -> [StoredEvent] {
        try read {
            try storedEvents(
                after: offset, limit: limit, rowCondition: #"AND e.payload LIKE '%"ClaimRequested"%'"#,
                blockCondition: #"AND b.events LIKE '%"ClaimRequested"%'"#,
                keep: { $0.stored.event.payload.contains(#""ClaimRequested""#) }
            ).map(\.stored).filter {
                if case .claimRequested = SessionEvent.parse($0.event.payload) { return true }
                return false
            }
        }
    }

    // MARK: - Inside a transaction

    /// Inside a transaction, after `syncPending()` (`tail`): the session report of one entity.
    func session(of entity: EntityKey, in tail: SyncedTail) throws -> EntitySession {
        EntitySession(
            entityType: entity.type, entityID: entity.id, history: try entityHistory(entity, in: tail).map(\.event),
            startingFrom: try checkpointSession(of: entity))
    }

    /// Who held the entity at the checkpoint the fold starts from (free without one).
    private func checkpointSession(of entity: EntityKey) throws -> SessionState {
        guard !covered.id.isEmpty, let row = try entityRowID(entity, create: false) else { return .free }
        return try checkpointBase(entityRow: row)?.session ?? .free
    }

    /// The session state and history of an entity this replica may claim
    /// now; throws when another holds it and the claim may not take over
    /// (no `takeover`, or a grant that only a relay may take over).
    private func claimableState(
        of entity: EntityKey, takeover: Bool, throughRelay: Bool, in tail: SyncedTail
    ) throws -> (SessionState, [StoredEvent]) {
        let (state, history) = try sessionState(of: entity, in: tail)
        guard let holder = state.holder, !holder.hasSameUTF8(as: replicaID) else { return (state, history) }
        if state.granted && !throughRelay {
            throw EventLogError.claimNeedsGrant(entityType: entity.type, entityID: entity.id, holder: holder)
        }
        if !takeover { throw EventLogError.entityHeld(entityType: entity.type, entityID: entity.id, holder: holder) }
        return (state, history)
    }

    private func sessionState(of entity: EntityKey, in tail: SyncedTail) throws -> (SessionState, [StoredEvent]) {
        let history = try entityHistory(entity, in: tail)
        let resolution = SessionFold.resolve(
            inCanonicalOrder: history.map(\.event), startingFrom: try checkpointSession(of: entity))
        return (resolution.state, history)
    }

    /// Appends a session event that sorts after every event of the entity
    /// held here (`history`, canonical order), so that the claim it names
    /// precedes it on every replica (a clock far ahead, which the local
    /// clock does not follow, included).
    private func appendSessionEvent(
        _ event: SessionEvent, to entity: EntityKey, after history: [StoredEvent], scope: String, in tail: SyncedTail
    ) throws -> StoredEvent {
        let newest = history.map(\.event.timeMs).max()
        return try appendInTransaction(
            [NewEvent(entityType: entity.type, entityID: entity.id, payload: event.payload, scope: scope)],
            sessionNotBeforeMs: newest.map { $0 == Int64.max ? $0 : $0 + 1 } ?? Int64.min, in: tail)[0]
    }

    /// Inside a write transaction, after `syncPending()` (`tail`): refuses a local
    /// domain event or undo for an entity another writer holds, naming the
    /// holder and how many of this replica's own events sessions dropped.
    func checkHolder(of entity: EntityKey, entityRow: Int64, in tail: SyncedTail) throws {
        guard let domain = domains[entity.type],
            let holder = try holder(entityRow: entityRow, domain: domain, in: tail),
            !holder.hasSameUTF8(as: replicaID)
        else { return }
        let report = try session(of: entity, in: tail)
        if report.tookOver(from: replicaID) {
            throw EventLogError.takenOver(
                entityType: entity.type, entityID: entity.id, holder: holder,
                droppedOwn: report.droppedCount(of: replicaID))
        }
        throw EventLogError.entityHeld(entityType: entity.type, entityID: entity.id, holder: holder)
    }
}
