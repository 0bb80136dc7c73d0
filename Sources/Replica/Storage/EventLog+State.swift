import Foundation

extension EventLog {
    /// The folded state of one entity, or nil when it has no folded event.
    public func projection<Entity: EventSourcedEntity>(_ type: Entity.Type, id: String) throws -> Entity? {
        try read {
            let current = try syncedProjections()
            let statement = try db.cached("SELECT id, state FROM entities WHERE entity_type = ? AND entity_id = ?")
            try statement.bind([.text(Entity.entityType), .text(id)])
            guard try statement.step() else { return nil }
            let entityRow = statement.int64(0)
            if let folded = current.states[entityRow] {
                return folded.hasState ? try decodeProjection(Entity.self, folded) : nil
            }
            return statement.isNull(1) ? nil : try decodeProjection(Entity.self, statement.text(1))
        }
    }

    /// Every folded entity of a domain, ordered by entity id.
    public func projections<Entity: EventSourcedEntity>(_ type: Entity.Type) throws -> [Entity] {
        try read {
            let current = try syncedProjections()
            let statement = try db.cached(
                "SELECT id, state FROM entities WHERE entity_type = ? ORDER BY entity_id")
            try statement.bind([.text(Entity.entityType)])
            var result: [Entity] = []
            while try statement.step() {
                let entityRow = statement.int64(0)
                if let folded = current.states[entityRow] {
                    if folded.hasState { result.append(try decodeProjection(Entity.self, folded)) }
                } else if !statement.isNull(1) {
                    result.append(try decodeProjection(Entity.self, statement.text(1)))
                }
            }
            return result
        }
    }

    /// The folded state of an entity of any folded type (Swift or
    /// declared) as its canonical JSON; nil when it has no folded event.
    public func state(entityType: String, entityID: String) throws -> String? {
        try states(entityType: entityType, from: entityID, through: entityID, limit: 1).first?.json
    }

    /// The folded states of `entityType` in entity id order (UTF-8 bytes),
    /// those after `after` (all with nil), at most `limit`, as canonical JSON.
    public func states(entityType: String, after: String? = nil, limit: Int = Int.max) throws
        -> [(id: String, json: String)]
    {
        try states(entityType: entityType, from: nil, after: after, through: nil, limit: limit)
    }

    private func states(
        entityType: String, from first: String? = nil, after: String? = nil, through last: String?, limit: Int
    ) throws -> [(id: String, json: String)] {
        try read {
            let current = try syncedProjections()
            let statement = try db.cached(
                """
                SELECT id, entity_id, state FROM entities
                WHERE entity_type = ?1 AND entity_id >= ?2 AND (?3 IS NULL OR entity_id > ?3)
                    AND (?4 IS NULL OR entity_id <= ?4)
                ORDER BY entity_id
                """)
            try statement.bind([
                .text(entityType), first.map { .text($0) } ?? .text(""), after.map { .text($0) } ?? .null,
                last.map { .text($0) } ?? .null,
            ])
            var result: [(id: String, json: String)] = []
            while result.count < limit, try statement.step() {
                if var folded = current.states[statement.int64(0)] {
                    if folded.hasState { result.append((statement.text(1), folded.encoded())) }
                } else if !statement.isNull(2) {
                    result.append((statement.text(1), statement.text(2)))
                }
            }
            return result
        }
    }

    /// A SHA-256 over every projection in canonical encoding: two replicas
    /// that hold the same events report the same hash.
    ///
    /// Hashed, in `(entity_type, entity_id)` byte order, per entity:
    /// `entity_type 0x00 entity_id 0x00 state-json 0x0A`.
    ///
    /// ```swift
    /// let hash = try log.stateHash()  // 64 hex digits; "e3b0c442…" for a log that folded nothing
    /// ```
    ///
    /// Hashing reads every projection (some 25 ms for 20,000 items), so the
    /// result is kept while the database does not change: until this log
    /// writes, or another connection commits (`PRAGMA data_version` moves).
    public func stateHash() throws -> String {
        try read {
            let version = try db.scalarInt("PRAGMA data_version") ?? 0
            if let kept = keptStateHash, kept.dataVersion == version { return kept.hex }
            _ = try syncPending()
            let statement = try db.cached(
                "SELECT id, entity_type, entity_id, state FROM entities ORDER BY entity_type, entity_id")
            var hash = SHA256()
            let separator: [UInt8] = [0]
            let newline: [UInt8] = [0x0A]
            while try statement.step() {
                let entityRow = statement.int64(0)
                // Encoded in place, so the text is kept for the next hash and the row write.
                let folded = pending?.states[entityRow]
                if let folded, !folded.hasState { continue }
                let pendingJSON = pending?.states[entityRow]?.encoded()
                guard pendingJSON != nil || !statement.isNull(3) else { continue }
                // Column bytes are hashed where SQLite holds them: no String per column.
                statement.withText(1) { hash.update($0) }
                hash.update(separator)
                statement.withText(2) { hash.update($0) }
                hash.update(separator)
                if let pendingJSON { hash.update(pendingJSON) } else { statement.withText(3) { hash.update($0) } }
                hash.update(newline)
            }
            let hex = hash.finalizeHex()
            keptStateHash = (version, hex)
            return hex
        }
    }

    /// A pending state as the domain's type; through its canonical text,
    /// checked as a stored one is, when it is not already of that type.
    private func decodeProjection<Entity: EventSourcedEntity>(_ type: Entity.Type, _ folded: FoldedEntity) throws
        -> Entity
    {
        if let entity = folded.state as? Entity { return entity }
        var folded = folded
        return try decodeProjection(Entity.self, folded.encoded())
    }

    private func decodeProjection<Entity: EventSourcedEntity>(_ type: Entity.Type, _ json: String) throws -> Entity {
        do {
            return try CanonicalJSON.decode(Entity.self, from: json)
        } catch {
            throw EventLogError.corrupt(
                path: path, reason: "stored \(Entity.entityType) projection does not decode: \(DecodingFailure(error))")
        }
    }
}
