import Foundation

/// A newly stored event together with the entity row it belongs to.
struct InsertedEvent {
    var stored: StoredEvent
    var entityRow: Int64
}

extension EventLog {
    /// Brings the projections of every entity touched by `inserted` up to
    /// date, inside the caller's write transaction.
    ///
    /// When all of an entity's new events sort after everything already
    /// folded (and none is an undo), they are applied on top of the stored
    /// projection; otherwise that one entity is refolded from its history.
    func foldInserted(_ inserted: [InsertedEvent]) throws {
        var byEntity: [Int64: [StoredEvent]] = [:]
        var order: [Int64] = []
        for item in inserted where domains[item.stored.event.entityType] != nil {
            if byEntity[item.entityRow] == nil { order.append(item.entityRow) }
            byEntity[item.entityRow, default: []].append(item.stored)
        }
        for entityRow in order {
            guard let newEvents = byEntity[entityRow], let first = newEvents.first,
                let domain = domains[first.event.entityType]
            else { continue }
            try foldEntity(entityRow, entityID: first.event.entityID, domain: domain, newEvents: newEvents)
        }
    }

    private func foldEntity(_ entityRow: Int64, entityID: String, domain: Domain, newEvents: [StoredEvent]) throws {
        let sortedNew = newEvents.sorted { $0.event.orderKey < $1.event.orderKey }
        let current = try projectionRow(entityRow)
        let appliesOnTop =
            current.map { current in
                sortedNew[0].event.orderKey > current.lastKey
                    && !sortedNew.contains { UndoneEvent.parse($0.event.payload) != nil }
            } ?? false

        let outcome: FoldOutcome
        let lastKey: EventOrderKey
        var history: [StoredEvent] = []
        if appliesOnTop, let current {
            outcome = domain.fold(
                entityID: entityID, from: current.stateJSON, decoded: current.decoded, sortedNew.map(\.event))
            lastKey = sortedNew[sortedNew.count - 1].event.orderKey
        } else {
            history = try entityHistory(row: entityRow)
            let events = history.map(\.event)
            let resolution = Fold.resolve(inCanonicalOrder: events)
            var refolded = domain.fold(entityID: entityID, from: nil, resolution.effective)
            // Poison is a property of the event, undone or not, so that every
            // replica counts the same whatever order undo and target arrived in.
            refolded.poisonEventIDs += resolution.cancelled.filter { !domain.decodes($0.payload) }.map(\.eventID)
            outcome = refolded
            lastKey = events[events.count - 1].orderKey
        }
        if !outcome.poisonEventIDs.isEmpty {
            let folded = appliesOnTop ? sortedNew : history
            let offsets = Dictionary(folded.map { ($0.event.eventID, $0.offset) }, uniquingKeysWith: { a, _ in a })
            for poisonID in outcome.poisonEventIDs {
                guard let offset = offsets[poisonID] else { continue }
                try db.cached("INSERT OR IGNORE INTO poison (local_offset) VALUES (?)").run([.int(offset)])
            }
        }
        try db.cached(
            """
            UPDATE entities SET state = ?, last_time_ms = ?, last_seq = ?, last_event_id = ?
            WHERE id = ?
            """
        ).run([
            .text(outcome.stateJSON), .int(lastKey.timeMs), .int(Int64(lastKey.seq)),
            .uuid(lastKey.eventID), .int(entityRow),
        ])
        foldedStates.store(FoldedStates.Entry(stateJSON: outcome.stateJSON, state: outcome.state), for: entityRow)
    }

    private struct ProjectionRow {
        var stateJSON: String
        var lastKey: EventOrderKey
        /// The state `stateJSON` decodes to, when `foldedStates` holds it.
        var decoded: (any Sendable)?
    }

    private func projectionRow(_ entityRow: Int64) throws -> ProjectionRow? {
        let statement = try db.cached(
            "SELECT state, last_time_ms, last_seq, last_event_id FROM entities WHERE id = ? AND state IS NOT NULL")
        try statement.bind([.int(entityRow)])
        guard try statement.step(), let eventID = statement.uuid(3) else { return nil }
        let key = EventOrderKey(timeMs: statement.int64(1), seq: UInt64(statement.int64(2)), eventID: eventID)
        if let held = foldedStates.entry(entityRow), statement.text(0, equals: held.stateJSON) {
            return ProjectionRow(stateJSON: held.stateJSON, lastKey: key, decoded: held.state)
        }
        return ProjectionRow(stateJSON: statement.text(0), lastKey: key)
    }
}
