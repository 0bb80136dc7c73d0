/// The shared store's tables, migrated by version like the SQLite log's
/// (docs/storage.md "The shared store"): `peersync_schema` holds the
/// versions applied, and each relay migrates the database when it starts,
/// one at a time (under an advisory lock).
enum StoreSchema {
    static var currentVersion: Int { migrations.count }

    /// Taken while migrating, so that relays starting at once migrate once.
    static let migrationLock = 7_257_020_301

    /// Version 1: the site's one log.
    /// - `peersync_site`: one row; `server_offset` is the newest offset
    ///   given out. A relay writing events locks the row (`FOR UPDATE`), so
    ///   the site's writes take offsets one transaction after another, and a
    ///   reader never sees a later offset committed before an earlier one.
    /// - `peersync_events`: every event of the site once, by server offset;
    ///   a feed slot holds one event.
    /// - `peersync_heads`: the signed heads relays stored with the events,
    ///   so that each relay serves the feeds on with their proofs.
    /// - `peersync_certificates`: the certificates (identity keys) any relay
    ///   learned, so that every relay's replicas can verify every feed;
    ///   `added` orders them, so that a relay reads only the new ones.
    static let version1 = """
        CREATE TABLE peersync_site (
            id            integer PRIMARY KEY CHECK (id = 1),
            store_id      text    NOT NULL,
            cluster       text    NOT NULL,
            server_offset bigint  NOT NULL
        );
        CREATE TABLE peersync_events (
            server_offset  bigint PRIMARY KEY,
            event_id       uuid   NOT NULL,
            replica_id     text   NOT NULL,
            scope          text   NOT NULL,
            seq            bigint NOT NULL,
            time_ms        bigint NOT NULL,
            entity_type    text   NOT NULL,
            entity_id      text   NOT NULL,
            payload        text   NOT NULL,
            server_time_ms bigint NOT NULL,
            relay          text   NOT NULL,
            UNIQUE (replica_id, scope, seq)
        );
        CREATE TABLE peersync_heads (
            replica_id    text   NOT NULL,
            scope         text   NOT NULL,
            seq           bigint NOT NULL,
            link          bytea  NOT NULL,
            signature     bytea  NOT NULL,
            server_offset bigint NOT NULL,
            PRIMARY KEY (replica_id, scope, seq)
        );
        CREATE INDEX peersync_heads_by_offset ON peersync_heads (server_offset);
        CREATE TABLE peersync_certificates (
            bytes      bytea     PRIMARY KEY,
            replica_id text      NOT NULL,
            added      bigserial NOT NULL UNIQUE
        );
        """

    static let migrations = [version1]

    /// Brings the database to `currentVersion`; refuses one a newer peerd migrated.
    static func migrate(_ db: PostgresConnection) throws {
        try db.execute("SELECT pg_advisory_lock($1)", ["\(migrationLock)"])
        defer { _ = try? db.execute("SELECT pg_advisory_unlock($1)", ["\(migrationLock)"]) }
        try db.execute("CREATE TABLE IF NOT EXISTS peersync_schema (version integer NOT NULL)")
        let version = Int(try db.int("SELECT coalesce(max(version), 0) FROM peersync_schema") ?? 0)
        guard version <= currentVersion else {
            throw SharedStoreError.newerSchema(found: version, supported: currentVersion)
        }
        for step in version..<currentVersion {
            try db.execute("BEGIN")
            do {
                try db.execute(migrations[step])
                try db.execute("INSERT INTO peersync_schema (version) VALUES ($1)", ["\(step + 1)"])
                try db.execute("COMMIT")
            } catch {
                _ = try? db.execute("ROLLBACK")
                throw error
            }
        }
    }
}
