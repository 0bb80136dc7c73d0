/// Feeds and entities are stored as small integers, so the event table and
/// its indexes hold compact keys (see docs/storage.md). Rows in `feeds` and
/// `entities` are never deleted, so a cached id stays valid while the
/// transaction that made it commits.
struct InternedIDs {
    var feeds: [FeedID: Int64] = [:]
    var entities: [EntityKey: Int64] = [:]

    /// Entity ids held at most; past it the cache starts afresh, so a log
    /// of millions of entities keeps the same memory as one of thousands.
    static let entityLimit = 32_768

    mutating func intern(_ key: EntityKey, as id: Int64) {
        if entities.count >= Self.entityLimit { entities.removeAll(keepingCapacity: true) }
        entities[key] = id
    }
}

/// An entity's identity: its type and id, compared by UTF-8 bytes as SQLite
/// compares them (see `FeedID`).
struct EntityKey: Hashable {
    var type: String
    var id: String

    static func == (lhs: EntityKey, rhs: EntityKey) -> Bool {
        lhs.type.hasSameUTF8(as: rhs.type) && lhs.id.hasSameUTF8(as: rhs.id)
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(bytes: type.utf8)
        hasher.combine(bytes: id.utf8)
    }
}

extension EventLog {
    /// The row id of `feed`, creating the row when asked.
    func feedRowID(_ feed: FeedID, create: Bool) throws -> Int64? {
        if let id = interned.feeds[feed] { return id }
        let select = try db.statement("SELECT id FROM feeds WHERE replica_id = ? AND scope = ?")
        try select.bind([.text(feed.replicaID), .text(feed.scope)])
        var id: Int64?
        if try select.step() {
            id = select.int64(0)
        } else if create {
            try db.statement("INSERT INTO feeds (replica_id, scope) VALUES (?, ?)")
                .run([.text(feed.replicaID), .text(feed.scope)])
            id = db.lastInsertRowID
        }
        if let id { interned.feeds[feed] = id }
        return id
    }

    /// The row id of an entity, creating the row when asked.
    func entityRowID(_ key: EntityKey, create: Bool) throws -> Int64? {
        if let id = interned.entities[key] { return id }
        let select = try db.statement("SELECT id FROM entities WHERE entity_type = ? AND entity_id = ?")
        try select.bind([.text(key.type), .text(key.id)])
        var id: Int64?
        if try select.step() {
            id = select.int64(0)
        } else if create {
            try db.statement("INSERT INTO entities (entity_type, entity_id) VALUES (?, ?)")
                .run([.text(key.type), .text(key.id)])
            id = db.lastInsertRowID
        }
        if let id { interned.intern(key, as: id) }
        return id
    }

    /// The highest contiguous seq held for a feed row.
    func headSeq(feedRow: Int64) throws -> UInt64 {
        let statement = try db.statement("SELECT head_seq FROM feeds WHERE id = ?")
        try statement.bind([.int(feedRow)])
        return try statement.step() ? UInt64(statement.int64(0)) : 0
    }

    /// The hybrid clock as stored; read inside each write transaction.
    func storedClock() throws -> HybridClock {
        let last = Int64(try EventLog.readMeta(db, "clock_ms") ?? "0") ?? 0
        return HybridClock(lastMs: last, maxSkewMs: options.maxClockSkewMs)
    }

    func storeClock(_ clock: HybridClock) throws {
        try db.statement("UPDATE meta SET value = ? WHERE key = 'clock_ms'").run([.text(String(clock.lastMs))])
    }
}
