import Foundation

extension EventLog {
    /// The folded state of one entity, or nil when it has no folded event.
    public func projection<Entity: EventSourcedEntity>(_ type: Entity.Type, id: String) throws -> Entity? {
        try read {
            let statement = try db.cached(
                "SELECT state FROM entities WHERE entity_type = ? AND entity_id = ? AND state IS NOT NULL")
            try statement.bind([.text(Entity.entityType), .text(id)])
            guard try statement.step() else { return nil }
            return try decodeProjection(Entity.self, statement.text(0))
        }
    }

    /// Every folded entity of a domain, ordered by entity id.
    public func projections<Entity: EventSourcedEntity>(_ type: Entity.Type) throws -> [Entity] {
        try read {
            let statement = try db.cached(
                "SELECT state FROM entities WHERE entity_type = ? AND state IS NOT NULL ORDER BY entity_id")
            try statement.bind([.text(Entity.entityType)])
            var result: [Entity] = []
            while try statement.step() { result.append(try decodeProjection(Entity.self, statement.text(0))) }
            return result
        }
    }

    /// A SHA-256 over every projection in canonical encoding: two replicas
    /// that hold the same events report the same hash.
    ///
    /// Hashed, in `(entity_type, entity_id)` byte order, per entity:
    /// `entity_type 0x00 entity_id 0x00 state-json 0x0A`.
    public func stateHash() throws -> String {
        try read {
            let statement = try db.cached(
                """
                SELECT entity_type, entity_id, state FROM entities
                WHERE state IS NOT NULL ORDER BY entity_type, entity_id
                """)
            var hash = SHA256()
            while try statement.step() {
                hash.update(statement.text(0))
                hash.update([0])
                hash.update(statement.text(1))
                hash.update([0])
                hash.update(statement.text(2))
                hash.update([0x0A])
            }
            return hash.finalizeHex()
        }
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
