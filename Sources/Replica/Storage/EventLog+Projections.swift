import Foundation

/// A newly stored event together with the entity row it belongs to.
struct InsertedEvent {
    var stored: StoredEvent
    var entityRow: Int64
    /// True for the entity's first stored event (no `entity_prev`).
    var startsChain: Bool
}

/// Proof that `EventLog.syncPending()` ran in the transaction open now:
/// `pending` folds every stored event after `meta.projected_offset`, and
/// `writtenRows` holds rows of that `projected_offset` only.
///
/// Only `syncPending()` makes one, and the functions that rely on it (chain
/// heads, storing and folding events, holders, entity histories) take one,
/// so calling them without the sync is a compile error. It holds no state
/// itself (the fold stays in `pending`, which a write moves on): it is valid
/// inside the transaction that made it, and must not be kept past it.
struct SyncedTail {
    fileprivate init() {}
}

extension EventLog {
    /// Inside a transaction: brings `pending` in line with the database.
    /// When another connection wrote the projection rows since (or this
    /// log never looked), the tail is folded afresh; events another
    /// connection appended are folded in. Returns the proof that it ran.
    func syncPending() throws -> SyncedTail {
        _ = try syncedProjections()
        return SyncedTail()
    }

    /// Inside a transaction: `syncPending()`, for a read that needs only
    /// the fold of the tail. Returns it.
    func syncedProjections() throws -> PendingProjections {
        try refreshDeclaredDomains()
        try refreshCoveredEvents()
        let (projected, newest) = try projectionOffsets()
        var current = pending ?? PendingProjections(projectedOffset: projected, knownOffset: projected)
        if pending == nil || current.projectedOffset != projected || current.knownOffset > newest {
            // Another connection wrote the rows (or this log has not looked yet): nothing kept holds.
            current = PendingProjections(projectedOffset: projected, knownOffset: projected)
            writtenRows = WrittenRows()
        }
        pending = nil  // until the tail is folded: a failure below must not leave half a fold
        while current.knownOffset < newest {
            let page = try storedEvents(after: current.knownOffset, through: newest, limit: 5000)
            guard let last = page.last else { break }
            for event in page { current.heads[event.entityRow] = event.stored.offset }
            try absorb(page, into: &current)
            current.knownOffset = last.stored.offset
        }
        current.knownOffset = newest
        pending = current
        return current
    }

    /// Inside a transaction: how far the projection rows go
    /// (`meta.projected_offset`) and the newest stored event's offset.
    func projectionOffsets() throws -> (projected: Int64, newest: Int64) {
        let projected = Int64(try EventLog.readMeta(db, "projected_offset") ?? "0") ?? 0
        return (projected, try newestOffset())
    }

    /// Inside a transaction, after `syncPending()` (`tail`): the chain head
    /// of an entity, its newest stored event (nil when it has none).
    func chainHead(entityRow: Int64, in tail: SyncedTail) throws -> Int64? {
        if let head = pending?.heads[entityRow] { return head }
        if let row = writtenRows.entry(entityRow) { return row.lastOffset }
        let statement = try db.statement("SELECT last_offset FROM entities WHERE id = ?")
        try statement.bind([.int(entityRow)])
        guard try statement.step(), !statement.isNull(0) else { return nil }
        return statement.int64(0)
    }

    /// Inside a write transaction, after `syncPending()` (`tail`): folds
    /// newly stored events into `pending` and writes the projection rows
    /// when `batchSize` or the lag says so (see `Options.ProjectionWrites`).
    ///
    /// A declaration among them that changes its type's declaration
    /// (docs/domains.md) refolds every entity of that type, and the rows are
    /// written in this transaction, so that other connections never read a
    /// row folded under the old declaration beside the new one.
    func foldInserted(_ inserted: [InsertedEvent], batchSize: Int, in tail: SyncedTail) throws {
        let declared = try applyDeclarations(inserted)
        guard var current = pending else { throw EventLogError.corrupt(path: path, reason: "projections not loaded") }
        pending = nil
        try absorb(inserted, into: &current)
        if let newest = inserted.last?.stored.offset { current.knownOffset = max(current.knownOffset, newest) }
        pending = current
        if !declared.isEmpty { return try refoldDeclaredTypes(declared, in: tail) }
        let writes = options.projectionWrites
        if batchSize < writes.deferFromBatchSize || current.lag >= Int64(writes.maxLagEvents)
            || current.states.count >= writes.maxEntities
        {
            try writePending(in: tail)
        }
    }

    /// Inside a write transaction, after `syncPending()` (`tail`): writes the
    /// projection rows of every pending entity, the poison found and
    /// `projected_offset`.
    func writePending(in tail: SyncedTail) throws {
        guard let current = pending, !current.isEmpty else { return }
        pending = nil
        for (entityRow, head) in current.heads.sorted(by: { $0.key < $1.key }) {
            guard var folded = current.states[entityRow], folded.hasState else {
                try db.statement(
                    "UPDATE entities SET last_offset = ?, holder = ? WHERE id = ?"
                ).run([.int(head), current.states[entityRow]?.holder.map { .text($0) } ?? .null, .int(entityRow)])
                continue
            }
            let stateJSON = folded.encoded()
            try db.statement(
                """
                UPDATE entities
                SET state = ?, last_time_ms = ?, last_seq = ?, last_event_id = ?, last_offset = ?, holder = ?
                WHERE id = ?
                """
            ).run([
                .text(stateJSON), .int(folded.lastKey.timeMs), .int(Int64(folded.lastKey.seq)),
                .uuid(folded.lastKey.eventID), .int(head), folded.holder.map { .text($0) } ?? .null, .int(entityRow),
            ])
            writtenRows.store(
                WrittenRows.Entry(
                    stateJSON: stateJSON, state: folded.state, lastKey: folded.lastKey, lastOffset: head,
                    holder: folded.holder),
                for: entityRow)
        }
        for offset in current.poisonOffsets.sorted() {
            try db.cached("INSERT OR IGNORE INTO poison (local_offset) VALUES (?)").run([.int(offset)])
        }
        try db.cached("UPDATE meta SET value = ? WHERE key = 'projected_offset'")
            .run([.text(String(current.knownOffset))])
        pending = PendingProjections(projectedOffset: current.knownOffset, knownOffset: current.knownOffset)
    }

    /// Folds `events` (stored, in any order) into `current`, one entity at a
    /// time: on top of its state when they all sort after what it holds and
    /// none is an undo, else refolded from the entity's whole history.
    private func absorb(_ events: [InsertedEvent], into current: inout PendingProjections) throws {
        // The events of folded types, grouped by entity, arrival order kept within each.
        var positions = events.indices.filter { domains[events[$0].stored.event.entityType] != nil }
        positions.sort { (events[$0].entityRow, $0) < (events[$1].entityRow, $1) }
        var start = 0
        while start < positions.count {
            let entityRow = events[positions[start]].entityRow
            var end = start + 1
            while end < positions.count, events[positions[end]].entityRow == entityRow { end += 1 }
            let group = positions[start..<end]
            start = end
            guard let domain = domains[events[group.first!].stored.event.entityType] else { continue }
            var newEvents = NewlyStored(
                group.map { events[$0].stored.event }, offsets: group.map { events[$0].stored.offset })
            newEvents.sortCanonically()
            // The entity's whole history when it begins in this group.
            let wholeHistory = group.contains { events[$0].startsChain }
            let base = try latestFold(entityRow, domain: domain, pending: current)
            // A second copy of a thin client's event is folded once: refold, so every replica agrees.
            let holdsCopy = try group.contains { try isRepeatedThinClientCopy(events[$0].stored) }
            current.states[entityRow] = try fold(
                entityRow: entityRow, domain: domain, base: holdsCopy ? nil : base, newEvents: newEvents,
                head: wholeHistory ? nil : newEvents.offsets.max()!, poison: &current.poisonOffsets)
        }
    }

    /// One entity's newly stored events with their offsets.
    private struct NewlyStored {
        var events: [Event]
        var offsets: [Int64]

        init(_ events: [Event], offsets: [Int64]) {
            self.events = events
            self.offsets = offsets
        }

        /// Sorts both in canonical order; a group is almost always in order already.
        mutating func sortCanonically() {
            guard !zip(events, events.dropFirst()).allSatisfy({ $0.orderKey < $1.orderKey }) else { return }
            let order = events.indices.sorted { events[$0].orderKey < events[$1].orderKey }
            events = order.map { events[$0] }
            offsets = order.map { offsets[$0] }
        }
    }

    /// The entity's state after `newEvents`: applied on top of `base` when
    /// they all sort after it and none is an undo, else refolded from the
    /// history ending at offset `head` (nil: `newEvents` are the whole
    /// history), on top of the entity's checkpoint base when it has one.
    private func fold(
        entityRow: Int64, domain: Domain, base: FoldedEntity?, newEvents: NewlyStored, head: Int64?,
        poison: inout Set<Int64>
    ) throws -> FoldedEntity {
        let events = newEvents.events
        var poisonIDs: [UUID] = []
        if let base, events[0].orderKey > base.lastKey,
            !events.contains(where: { UndoneEvent.parse($0.payload) != nil || SessionEvent.parse($0.payload) != nil })
        {
            // On top of the stored state; while someone holds the entity, only their events apply.
            var applied = events
            if let holder = base.holder {
                applied = events.filter { $0.writer.hasSameUTF8(as: holder) }
                poisonIDs += events.filter {
                    !$0.writer.hasSameUTF8(as: holder) && !domain.decodesStoredEvent($0.payload)
                        && !domain.decodes($0.payload)
                }.map(\.eventID)
            }
            let state = domain.apply(applied, to: base.state, poison: &poisonIDs)
            record(poisonIDs, in: events, offsets: newEvents.offsets, into: &poison)
            return FoldedEntity(
                domain: domain, state: state, lastKey: events[events.count - 1].orderKey, holder: base.holder)
        }
        var history = newEvents
        if let head {
            let stored = try entityHistory(head: head)
            history = NewlyStored(stored.map(\.event), offsets: stored.map(\.offset))
        }
        let start = try checkpointBase(entityRow: entityRow)
        guard let lastKey = history.events.last?.orderKey ?? start?.lastKey else {
            throw EventLogError.corrupt(
                path: path, reason: "an entity to fold has neither events nor a checkpoint base")
        }
        let needsResolving =
            start?.session.holder != nil
            || history.events.contains {
                $0.feed.isThinClient || UndoneEvent.parse($0.payload) != nil || SessionEvent.mayBe($0.payload)
            }
        let resolution =
            needsResolving
            ? Fold.resolve(inCanonicalOrder: history.events, startingFrom: start?.session ?? .free)
            : Fold.Resolution(effective: history.events)
        let state = domain.apply(
            resolution.effective, to: domain.state(entityID: events[0].entityID, from: start?.state),
            poison: &poisonIDs)
        // Poison is a property of the event, undone, dropped or not, so that every
        // replica counts the same whatever order undo and target arrived in.
        poisonIDs += (resolution.cancelled + resolution.dropped.map(\.event))
            .filter { !domain.decodesStoredEvent($0.payload) && !domain.decodes($0.payload) }.map(\.eventID)
        record(poisonIDs, in: history.events, offsets: history.offsets, into: &poison)
        var folded = FoldedEntity(domain: domain, state: state, lastKey: lastKey, holder: resolution.session.holder)
        folded.hasState = start?.state != nil || Self.hasProjection(history.events)
        return folded
    }

    /// Inside a write transaction: refolds every entity of `types` from its
    /// whole history under the domain now held for it (a type no longer
    /// declared loses its projections), recounts their poison, and writes
    /// the rows.
    func refoldDeclaredTypes(_ types: Set<String>, in tail: SyncedTail) throws {
        guard var current = pending else { throw EventLogError.corrupt(path: path, reason: "projections not loaded") }
        pending = nil
        for type in types.sorted() {
            guard let domain = domains[type] else {
                try db.statement("UPDATE entities SET state = NULL WHERE entity_type = ?").run([.text(type)])
                for row in try entityRows(of: type).map(\.row) { current.states[row] = nil }
                continue
            }
            // `pending` is taken: the tail's heads are in `current`.
            try forEachHistory(of: type, heads: current.heads, in: tail) { row, _, head, stored in
                // Poison is what the new declaration cannot decode: counted afresh.
                for event in stored {
                    current.poisonOffsets.remove(event.offset)
                    try db.cached("DELETE FROM poison WHERE local_offset = ?").run([.int(event.offset)])
                }
                current.states[row] = try freshFold(
                    stored, entityRow: row, domain: domain, poison: &current.poisonOffsets)
                current.heads[row] = head
            }
        }
        pending = current
        try writePending(in: tail)
    }

    /// Inside a transaction: the entities of `domain`'s type whose state
    /// would differ if folded under `domain` instead of the domain held
    /// for the type now, by entity id, and how many entities it has.
    func stateChanges(under domain: Domain, in tail: SyncedTail) throws -> (changed: [String], total: Int) {
        let held = domains[domain.entityType]
        var changed: [String] = []
        var total = 0
        try forEachHistory(of: domain.entityType, heads: pending?.heads ?? [:], in: tail) { row, id, _, stored in
            guard Self.hasProjection(stored.map(\.event)) else { return }
            total += 1
            var poison: Set<Int64> = []
            var fresh = try freshFold(stored, entityRow: row, domain: domain, poison: &poison)
            var now = try held.flatMap { try latestFold(row, domain: $0, pending: pending) }
            if fresh.encoded() != now?.encoded() { changed.append(id) }
        }
        return (changed.sorted(), total)
    }

    /// Inside a transaction: each entity of `type` that has events, with its
    /// head (from `heads`, the tail's, else its row) and its whole history.
    func forEachHistory(
        of type: String, heads: [Int64: Int64], in tail: SyncedTail,
        _ body: (_ row: Int64, _ id: String, _ head: Int64, _ history: [StoredEvent]) throws -> Void
    ) throws {
        for (row, id) in try entityRows(of: type) {
            guard let head = try heads[row] ?? chainHead(entityRow: row, in: tail) else { continue }
            let stored = try entityHistory(head: head)
            if !stored.isEmpty { try body(row, id, head, stored) }
        }
    }

    /// Inside a transaction: the rows and ids of the entities of `type`.
    private func entityRows(of type: String) throws -> [(row: Int64, id: String)] {
        let statement = try db.statement("SELECT id, entity_id FROM entities WHERE entity_type = ? ORDER BY id")
        try statement.bind([.text(type)])
        var rows: [(row: Int64, id: String)] = []
        while try statement.step() { rows.append((statement.int64(0), statement.text(1))) }
        return rows
    }

    /// A fold of `history` (an entity's events past its checkpoint base)
    /// from that base, or from nothing, under `domain`.
    func freshFold(_ history: [StoredEvent], entityRow: Int64, domain: Domain, poison: inout Set<Int64>) throws
        -> FoldedEntity
    {
        try fold(
            entityRow: entityRow, domain: domain, base: nil,
            newEvents: NewlyStored(history.map(\.event), offsets: history.map(\.offset)),
            head: nil, poison: &poison)
    }

    private func record(_ poisonIDs: [UUID], in events: [Event], offsets: [Int64], into poison: inout Set<Int64>) {
        guard !poisonIDs.isEmpty else { return }
        let ids = Set(poisonIDs)
        for (event, offset) in zip(events, offsets) where ids.contains(event.eventID) { poison.insert(offset) }
    }

    /// True when a history holds an event other than a session event: an
    /// entity claimed before anything else happened to it has no projection.
    static func hasProjection(_ history: [Event]) -> Bool {
        history.contains { SessionEvent.parse($0.payload) == nil }
    }

    /// Inside a transaction, after `syncPending()` (`tail`): the writer
    /// holding an entity of a folded type after its newest event; nil when
    /// it is free.
    func holder(entityRow: Int64, domain: Domain, in tail: SyncedTail) throws -> String? {
        if let folded = try latestFold(entityRow, domain: domain, pending: pending) { return folded.holder }
        // An entity with session events alone has no projection row, only its holder.
        let statement = try db.cached("SELECT holder FROM entities WHERE id = ?")
        try statement.bind([.int(entityRow)])
        defer { statement.reset() }
        return try statement.step() && !statement.isNull(0) ? statement.text(0) : nil
    }

    /// The newest fold of an entity this log holds: its state in `pending`
    /// (the fold of the tail) when the tail has events of it, else its
    /// projection row as stored (`storedFold`, through `writtenRows`); nil
    /// when it has neither.
    ///
    /// The one rule that keeps both caches true: they describe the rows at
    /// `meta.projected_offset` equal to `pending.projectedOffset`. Only a
    /// write of pending projections changes the rows, and it moves
    /// `projected_offset`: this log's own (`writePending`) renews both
    /// together, another connection's makes `syncPending()` drop both, and a
    /// failed write drops both (`write`).
    func latestFold(
        _ entityRow: Int64, domain: Domain, pending: PendingProjections?
    ) throws -> FoldedEntity? {
        if let folded = pending?.states[entityRow] { return folded }
        return try storedFold(entityRow, domain: domain)
    }

    /// The projection row of an entity as stored, decoded; see `latestFold`.
    private func storedFold(_ entityRow: Int64, domain: Domain) throws -> FoldedEntity? {
        if let row = writtenRows.entry(entityRow) {
            return FoldedEntity(
                domain: domain, state: row.state, lastKey: row.lastKey, stateJSON: row.stateJSON, holder: row.holder)
        }
        let statement = try db.statement(
            """
            SELECT state, last_time_ms, last_seq, last_event_id, entity_id, last_offset, holder
            FROM entities WHERE id = ? AND state IS NOT NULL
            """)
        try statement.bind([.int(entityRow)])
        guard try statement.step(), let eventID = statement.uuid(3) else { return nil }
        let key = EventOrderKey(timeMs: statement.int64(1), seq: UInt64(statement.int64(2)), eventID: eventID)
        let stateJSON = statement.text(0)
        let state = domain.state(entityID: statement.text(4), from: stateJSON)
        let holder = statement.isNull(6) ? nil : statement.text(6)
        writtenRows.store(
            WrittenRows.Entry(
                stateJSON: stateJSON, state: state, lastKey: key,
                lastOffset: statement.isNull(5) ? nil : statement.int64(5), holder: holder),
            for: entityRow)
        return FoldedEntity(domain: domain, state: state, lastKey: key, stateJSON: stateJSON, holder: holder)
    }
}
