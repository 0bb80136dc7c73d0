/// The database schema and its migrations. `PRAGMA application_id` marks a
/// PeerSync file; `PRAGMA user_version` is the schema version.
enum Schema {
    /// 'PSYN': tells a PeerSync database from any other SQLite file.
    static let applicationID: Int64 = 0x5053_594E

    /// The schema version this build writes.
    static var currentVersion: Int { migrations.count }

    /// `migrations[n]` takes a database from version `n` to `n + 1`.
    /// Append new steps; never edit a released one.
    static let migrations: [String] = [
        version1, version2, version3, version4, version5, version6, version7, version8, version9, version10,
    ]

    private static let version1 = """
        CREATE TABLE meta (
            key   TEXT PRIMARY KEY,
            value TEXT NOT NULL
        ) WITHOUT ROWID;

        CREATE TABLE feeds (
            id         INTEGER PRIMARY KEY,
            replica_id TEXT NOT NULL,
            scope      TEXT NOT NULL,
            head_seq   INTEGER NOT NULL DEFAULT 0,
            UNIQUE (replica_id, scope)
        );

        CREATE TABLE entities (
            id            INTEGER PRIMARY KEY,
            entity_type   TEXT NOT NULL,
            entity_id     TEXT NOT NULL,
            state         TEXT,
            last_time_ms  INTEGER,
            last_seq      INTEGER,
            last_event_id BLOB,
            UNIQUE (entity_type, entity_id)
        );

        CREATE TABLE events (
            local_offset INTEGER PRIMARY KEY,
            feed         INTEGER NOT NULL REFERENCES feeds (id),
            seq          INTEGER NOT NULL,
            event_id     BLOB NOT NULL,
            time_ms      INTEGER NOT NULL,
            entity       INTEGER NOT NULL REFERENCES entities (id),
            payload      TEXT NOT NULL,
            arrival_ms   INTEGER NOT NULL,
            UNIQUE (feed, seq)
        );
        CREATE INDEX events_by_entity ON events (entity);

        CREATE TABLE quarantine (
            id            INTEGER PRIMARY KEY,
            reason        TEXT NOT NULL,
            replica_id    TEXT NOT NULL,
            scope         TEXT NOT NULL,
            seq           INTEGER NOT NULL,
            event_id      TEXT NOT NULL,
            held_event_id TEXT,
            event_json    TEXT NOT NULL,
            detected_ms   INTEGER NOT NULL,
            UNIQUE (replica_id, scope, seq, event_id)
        );

        CREATE TABLE poison (
            local_offset INTEGER PRIMARY KEY REFERENCES events (local_offset)
        );

        CREATE TABLE idempotency_keys (
            key          TEXT PRIMARY KEY,
            local_offset INTEGER NOT NULL REFERENCES events (local_offset)
        ) WITHOUT ROWID;

        CREATE VIEW event_log AS
        SELECT e.local_offset,
               lower(substr(hex(e.event_id), 1, 8) || '-' || substr(hex(e.event_id), 9, 4) || '-' ||
                     substr(hex(e.event_id), 13, 4) || '-' || substr(hex(e.event_id), 17, 4) || '-' ||
                     substr(hex(e.event_id), 21)) AS event_id,
               f.replica_id, f.scope, e.seq, e.time_ms,
               n.entity_type, n.entity_id, e.payload, e.arrival_ms
        FROM events e JOIN feeds f ON f.id = e.feed JOIN entities n ON n.id = e.entity;

        CREATE VIEW items AS
        SELECT entity_id AS id,
               json_extract(state, '$.name') AS name,
               json_extract(state, '$.quantity') AS quantity,
               json_extract(state, '$.note') AS note,
               json_extract(state, '$.deleted') AS deleted,
               json_extract(state, '$.last_modified_ms') AS last_modified_ms
        FROM entities WHERE entity_type = 'item' AND state IS NOT NULL;
        """

    /// Version 2: no index on `events (entity)`. Each event names the
    /// entity's previous event (`entity_prev`, a chain walked by rowid) and
    /// each entity its newest (`last_offset`), so an insert writes no random
    /// index page. Projection rows may lag the log: `meta.projected_offset`
    /// says up to which local offset they are folded (docs/storage.md).
    private static let version2 = """
        ALTER TABLE events ADD COLUMN entity_prev INTEGER;
        ALTER TABLE entities ADD COLUMN last_offset INTEGER;
        UPDATE events SET entity_prev = (
            SELECT max(p.local_offset) FROM events p
            WHERE p.entity = events.entity AND p.local_offset < events.local_offset);
        UPDATE entities SET last_offset = (SELECT max(local_offset) FROM events WHERE entity = entities.id);
        DROP INDEX events_by_entity;
        INSERT INTO meta (key, value) SELECT 'projected_offset', coalesce(max(local_offset), 0) FROM events;
        """

    /// Version 3: thin-client events by id. The events of a feed a node
    /// keeps for a thin client (`client@node`) carry no seq of the client's,
    /// so a retried push is recognised by its event id; only these events
    /// are indexed, the rest of the log keeps to its feed slots. The first
    /// copy of an id to arrive is the one indexed (docs/relay.md).
    private static let version3 = """
        CREATE TABLE thin_client_events (
            event_id     BLOB PRIMARY KEY,
            local_offset INTEGER NOT NULL REFERENCES events (local_offset)
        ) WITHOUT ROWID;
        INSERT OR IGNORE INTO thin_client_events (event_id, local_offset)
        SELECT e.event_id, e.local_offset FROM events e JOIN feeds f ON f.id = e.feed
        WHERE instr(f.replica_id, '@') > 0 ORDER BY e.local_offset;
        """

    /// Version 4: single-writer sessions (docs/sessions.md). `holder` is
    /// the writer holding the entity after its folded events, NULL when it
    /// is free; `claimed` is 1 once any session event of the entity is
    /// stored. No earlier build wrote session events: every row is free.
    private static let version4 = """
        ALTER TABLE entities ADD COLUMN holder TEXT;
        ALTER TABLE entities ADD COLUMN claimed INTEGER NOT NULL DEFAULT 0;
        """

    /// Version 5: block rows (docs/storage.md "Block rows"). A run of one
    /// feed's events received together is stored as one `event_blocks`
    /// row: local offsets `first_offset…last_offset`, seqs
    /// `first_seq…last_seq`, the events as a JSON array (`EventBlock`).
    /// Rows of `events` and blocks share one offset space; `event_log`
    /// shows both, a block's events through `json_each`.
    private static let version5 = """
        CREATE TABLE event_blocks (
            first_offset INTEGER PRIMARY KEY,
            last_offset  INTEGER NOT NULL,
            feed         INTEGER NOT NULL REFERENCES feeds (id),
            first_seq    INTEGER NOT NULL,
            last_seq     INTEGER NOT NULL,
            arrival_ms   INTEGER NOT NULL,
            events       TEXT NOT NULL
        );
        CREATE INDEX event_blocks_by_feed ON event_blocks (feed, last_seq, first_seq);

        DROP VIEW event_log;
        CREATE VIEW event_log AS
        SELECT e.local_offset,
               lower(substr(hex(e.event_id), 1, 8) || '-' || substr(hex(e.event_id), 9, 4) || '-' ||
                     substr(hex(e.event_id), 13, 4) || '-' || substr(hex(e.event_id), 17, 4) || '-' ||
                     substr(hex(e.event_id), 21)) AS event_id,
               f.replica_id, f.scope, e.seq, e.time_ms,
               n.entity_type, n.entity_id, e.payload, e.arrival_ms
        FROM events e JOIN feeds f ON f.id = e.feed JOIN entities n ON n.id = e.entity
        UNION ALL
        SELECT b.first_offset + j.key AS local_offset, j.value ->> 0 AS event_id,
               f.replica_id, f.scope, b.first_seq + j.key AS seq, j.value ->> 1 AS time_ms,
               j.value ->> 3 AS entity_type, j.value ->> 4 AS entity_id, j.value -> 6 AS payload, b.arrival_ms
        FROM event_blocks b JOIN feeds f ON f.id = b.feed, json_each(b.events) j;
        """

    /// Version 6: signed feeds (docs/protocol.md "Signed feeds"). `head_link`
    /// is the chain link at `head_seq` (NULL until computed for a feed
    /// stored before this version), `head_signature` the origin's
    /// signature of that head when held; `feed_signatures` holds signed
    /// heads below the head, the other points a page it serves may end at; `forked_feeds` the feeds whose origin signed two
    /// histories, with the proof; `certificates` the certificates (their
    /// bytes, docs/identity.md) of the replicas whose keys it verifies with.
    private static let version6 = """
        ALTER TABLE feeds ADD COLUMN head_link BLOB;
        ALTER TABLE feeds ADD COLUMN head_signature BLOB;

        CREATE TABLE feed_signatures (
            feed      INTEGER NOT NULL REFERENCES feeds (id),
            seq       INTEGER NOT NULL,
            link      BLOB NOT NULL,
            signature BLOB NOT NULL,
            PRIMARY KEY (feed, seq)
        ) WITHOUT ROWID;

        CREATE TABLE forked_feeds (
            feed            INTEGER PRIMARY KEY REFERENCES feeds (id),
            held_seq        INTEGER NOT NULL,
            held_link       BLOB NOT NULL,
            held_signature  BLOB,
            other_seq       INTEGER NOT NULL,
            other_link      BLOB NOT NULL,
            other_signature BLOB NOT NULL,
            other_base_link BLOB NOT NULL,
            other_events    TEXT NOT NULL,
            detected_ms     INTEGER NOT NULL
        );

        CREATE TABLE certificates (
            replica_id TEXT NOT NULL,
            bytes      BLOB NOT NULL,
            PRIMARY KEY (replica_id, bytes)
        ) WITHOUT ROWID;
        """

    /// Version 7: declared domains (docs/domains.md). `domains` holds, per
    /// declared entity type, the declaration that counts (the highest
    /// version; at equal versions the later event in canonical order) and
    /// the order key of the event that declared it; `meta.domains_trust`
    /// whose declarations count (`open`, or the admin key's hex), and
    /// `meta.domains_generation` moves at every change, so that other
    /// connections load the declarations again.
    private static let version7 = """
        CREATE TABLE domains (
            entity_type   TEXT PRIMARY KEY,
            version       INTEGER NOT NULL,
            declaration   TEXT NOT NULL,
            time_ms       INTEGER NOT NULL,
            seq           INTEGER NOT NULL,
            event_id      BLOB NOT NULL,
            declared_by   TEXT NOT NULL,
            signed_by     BLOB
        ) WITHOUT ROWID;

        INSERT OR IGNORE INTO meta (key, value) VALUES ('domains_trust', 'open'), ('domains_generation', '0');
        """

    /// Version 8: checkpoints (docs/storage.md "Checkpoints"). `checkpoints`
    /// holds the checkpoints this log took, by id: their content
    /// (`CheckpointContent.encoded`) and the statement they came in (a
    /// signed one, as SyncProtocol writes it). `meta.checkpoint` names the
    /// one the fold starts from (hex id, empty for none); `entity_bases`
    /// holds its state per entity, on which the events it does not cover
    /// are folded. `meta.history_held` is 0 when this log lacks events the
    /// checkpoint covers (it started from the checkpoint).
    private static let version8 = """
        CREATE TABLE checkpoints (
            id        BLOB PRIMARY KEY,
            content   BLOB NOT NULL,
            statement BLOB NOT NULL,
            made_ms   INTEGER NOT NULL,
            taken_ms  INTEGER NOT NULL
        ) WITHOUT ROWID;

        CREATE TABLE entity_bases (
            entity        INTEGER PRIMARY KEY REFERENCES entities (id),
            state         TEXT,
            holder        TEXT,
            claim         BLOB,
            granted       INTEGER NOT NULL,
            last_time_ms  INTEGER NOT NULL,
            last_seq      INTEGER NOT NULL,
            last_event_id BLOB NOT NULL
        );

        INSERT OR IGNORE INTO meta (key, value) VALUES ('checkpoint', ''), ('history_held', '1');
        """

    /// Version 9: acknowledgements of checkpoints (docs/storage.md
    /// "Dropping history"): per checkpoint and replica, the replica's
    /// signed statement that it folds from it. `meta.history_floor` names
    /// the checkpoint (hex id) at or below whose cursor this log holds no
    /// event, empty when it holds every event; it replaces
    /// `meta.history_held`, which could not say that a log holds the events
    /// between the checkpoint it started from and a later one it took.
    private static let version9 = """
        CREATE TABLE checkpoint_acks (
            checkpoint BLOB NOT NULL,
            replica    TEXT NOT NULL,
            ack        BLOB NOT NULL,
            PRIMARY KEY (checkpoint, replica)
        ) WITHOUT ROWID;

        INSERT OR IGNORE INTO meta (key, value) VALUES ('history_floor',
            CASE WHEN (SELECT value FROM meta WHERE key = 'history_held') = '0'
                 THEN (SELECT value FROM meta WHERE key = 'checkpoint') ELSE '' END);
        DELETE FROM meta WHERE key = 'history_held';
        """

    /// Version 10: the thin-client index in two tables (docs/storage.md
    /// "The thin-client index"). New ids go to `thin_client_recent`, small
    /// enough that the random ids of one push touch few of its pages; they
    /// move to `thin_client_events` in one sorted pass once thousands are
    /// held. An id is in one of the two, with the first copy's offset.
    private static let version10 = """
        CREATE TABLE thin_client_recent (
            event_id     BLOB PRIMARY KEY,
            local_offset INTEGER NOT NULL REFERENCES events (local_offset)
        ) WITHOUT ROWID;
        """
}
