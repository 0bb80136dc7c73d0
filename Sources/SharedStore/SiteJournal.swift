import Foundation
import Replica
import Synchronization

/// A site's relays on one PostgreSQL database, acting as one relay
/// (docs/relay.md "Relays on a shared PostgreSQL"). Each relay keeps its
/// SQLite log as a mirror of the store, in the store's order: an event's
/// local offset is its server offset on every relay, so a phone's cursor
/// is valid on each of them, and everything a relay serves (pulls, undo,
/// checkpoints, sessions) comes from its log as on a relay of its own.
///
/// As the log's `SharedJournal`, every write of the relay's log takes the
/// site's write lock (the `peersync_site` row), mirrors what other relays
/// committed, stores its events after the site's newest offset and commits
/// them to PostgreSQL before the log commits. `catchUp` mirrors what other
/// relays committed meanwhile (on a notification, `StoreListener`).
///
/// `@unchecked Sendable`: the connection is used only by the log's writer,
/// one call at a time (the storage executor's writer queue).
public final class SiteJournal: SharedJournal, @unchecked Sendable {
    /// The libpq connection string (`postgresql://…`).
    public let conninfo: String
    /// This relay's replica id, recorded with each event it stored (set by `attach`).
    public private(set) var relayID: String
    /// The notification channel a commit of events signals.
    public static let channel = "peersync_events"
    /// Events read from the store per mirrored transaction.
    static let mirrorPage = 2_000

    private var connection: PostgresConnection?
    private var open = false
    private var committed = false
    /// The certificates this relay knows the store holds.
    private var certificatesShared: Set<[UInt8]> = []
    /// The newest `peersync_certificates.added` this relay read.
    private var certificatesRead: Int64 = 0
    /// This relay's own certificate, which its log does not keep.
    private let ownCertificate = Mutex<(replicaID: String, bytes: [UInt8])?>(nil)

    public init(conninfo: String) {
        self.conninfo = conninfo
        self.relayID = ""
    }

    /// Connects, migrates the schema, checks that the store is this
    /// cluster's (making the site's row on first use) and that `log`
    /// mirrors it (recording so on an empty log); returns the store's id.
    @discardableResult
    public func attach(_ log: EventLog, cluster: String) throws -> String {
        relayID = log.replicaID
        let db = try connected()
        do {
            try StoreSchema.migrate(db)
            try db.execute(
                """
                INSERT INTO peersync_site (id, store_id, cluster, server_offset) VALUES (1, $1, $2, 0)
                ON CONFLICT (id) DO NOTHING
                """, [UUID().uuidString.lowercased(), cluster])
            guard let site = try db.query("SELECT store_id, cluster FROM peersync_site WHERE id = 1").first,
                let storeID = site[0], let storeCluster = site[1]
            else { throw SharedStoreError.notMirrorable("the shared store has no site row") }
            guard storeCluster == cluster else {
                throw SharedStoreError.foreignCluster(store: storeID, cluster: storeCluster, ours: cluster)
            }
            switch try log.sharedStoreID() {
            case storeID?:
                let held = try log.sharedOffset()
                let head = try db.int("SELECT server_offset FROM peersync_site WHERE id = 1") ?? 0
                guard held <= head else {
                    throw SharedStoreError.notMirrorable(
                        "\(log.path) holds the store's events up to offset \(held), but the store ends at \(head): "
                            + "it was restored from an older backup; give this relay a new, empty data directory "
                            + "(`peerd init --join`), and its replicas bring back what the backup lacks")
                }
            case let other?:
                throw SharedStoreError.notMirrorable(
                    "\(log.path) mirrors the shared store \(other), not \(storeID); give this relay a new data "
                        + "directory (`peerd init --join`) to use this store")
            case nil:
                guard try log.cursor().heads.isEmpty else {
                    throw SharedStoreError.notMirrorable(
                        "\(log.path) holds events of its own, which the shared store \(storeID) lacks; a relay "
                            + "joins a shared store with an empty log (`peerd init --join` into a new directory), "
                            + "and its replicas bring their events to it")
                }
                try log.attachSharedStore(storeID, offset: 0)
            }
            return storeID
        } catch let error as PostgresError {
            throw unavailable(error)
        }
    }

    /// Mirrors into `log` what the store holds past the log's shared
    /// offset (outside a write: what other relays committed); returns the
    /// events stored.
    public func catchUp(_ log: EventLog) throws -> [StoredEvent] {
        let db = try connected()
        do {
            guard let head = try db.int("SELECT server_offset FROM peersync_site WHERE id = 1") else { return [] }
            try shareCertificates(of: log, using: db)
            return try mirror(into: log, through: head, using: db)
        } catch let error as PostgresError {
            throw unavailable(error)
        }
    }

    // MARK: - SharedJournal

    public func beginWrite(_ log: EventLog) throws -> Int64 {
        let db = try connected()
        do {
            try db.execute("BEGIN")
            open = true
            committed = false
            guard let head = try db.int("SELECT server_offset FROM peersync_site WHERE id = 1 FOR UPDATE") else {
                throw SharedStoreError.notMirrorable("the shared store has no site row")
            }
            try shareCertificates(of: log, using: db)
            try mirror(into: log, through: head, using: db)
            return head
        } catch let error as PostgresError {
            endWrite()
            throw unavailable(error)
        } catch {
            endWrite()
            throw error
        }
    }

    public func publish(_ events: [StoredEvent], signed: [SignedHead], by log: EventLog) throws {
        guard let db = connection, open, let newest = events.last?.offset else { return }
        do {
            try db.execute(
                "INSERT INTO peersync_events SELECT * FROM json_populate_recordset(NULL::peersync_events, $1)",
                [Self.eventRows(events, relay: relayID)])
            let heads = Self.headRows(signed, events: events)
            if heads != "[]" {
                try db.execute(
                    """
                    INSERT INTO peersync_heads SELECT * FROM json_populate_recordset(NULL::peersync_heads, $1)
                    ON CONFLICT DO NOTHING
                    """, [heads])
            }
            try uploadCertificates(of: log, using: db)
            try db.execute("UPDATE peersync_site SET server_offset = $1 WHERE id = 1", ["\(newest)"])
            try db.execute("SELECT pg_notify($1, $2)", [Self.channel, "\(newest)"])
            try db.execute("COMMIT")
            committed = true
        } catch let error as PostgresError {
            throw unavailable(error)
        }
    }

    public func endWrite() {
        if open, !committed { _ = try? connection?.execute("ROLLBACK") }
        open = false
    }

    // MARK: - Mirroring

    /// Mirrors the events after the log's shared offset up to `head`, a page
    /// per transaction of the log.
    @discardableResult
    private func mirror(into log: EventLog, through head: Int64, using db: PostgresConnection) throws
        -> [StoredEvent]
    {
        var held = try log.sharedOffset()
        var stored: [StoredEvent] = []
        while held < head {
            let rows = try db.query(
                """
                SELECT server_offset, event_id, replica_id, scope, seq, time_ms, entity_type, entity_id, payload,
                       server_time_ms
                FROM peersync_events WHERE server_offset > $1 AND server_offset <= $2
                ORDER BY server_offset LIMIT $3
                """, ["\(held)", "\(head)", "\(Self.mirrorPage)"])
            let entries = try rows.map(Self.entry)
            let through = entries.count == Self.mirrorPage ? entries.last!.offset : head
            let heads = try db.query(
                """
                SELECT replica_id, scope, seq, encode(link, 'hex'), encode(signature, 'hex')
                FROM peersync_heads WHERE server_offset > $1 AND server_offset <= $2
                """, ["\(held)", "\(through)"]
            ).map(Self.head)
            stored += try log.mirror(entries, heads: heads, through: through)
            held = through
        }
        return stored
    }

    // MARK: - Certificates

    /// Shares this relay's own certificate (its identity key) with the
    /// other relays from the next call on, so that their replicas verify
    /// the feeds it signs (its own and its thin clients').
    public func share(ownCertificate bytes: [UInt8], replicaID: String) {
        ownCertificate.withLock { $0 = (replicaID, bytes) }
    }

    /// Keeps the certificates other relays shared and shares this relay's
    /// own, so that each relay's replicas verify every feed (a replica's
    /// key reaches the relay it connects to only).
    private func shareCertificates(of log: EventLog, using db: PostgresConnection) throws {
        let rows = try db.query(
            "SELECT added, replica_id, encode(bytes, 'hex') FROM peersync_certificates WHERE added > $1 ORDER BY added",
            ["\(certificatesRead)"])
        var fresh: [(replicaID: String, bytes: [UInt8])] = []
        for row in rows {
            guard let added = row[0].flatMap({ Int64($0) }), let replicaID = row[1],
                let bytes = row[2].flatMap(Hex.bytes)
            else { throw SharedStoreError.notMirrorable("the shared store holds a malformed certificate row") }
            certificatesRead = max(certificatesRead, added)
            if certificatesShared.insert(bytes).inserted { fresh.append((replicaID, bytes)) }
        }
        if !fresh.isEmpty { try log.mirrorCertificates(fresh) }
        try uploadCertificates(of: log, using: db)
    }

    /// Stores in the store the certificates the log keeps that it lacks.
    private func uploadCertificates(of log: EventLog, using db: PostgresConnection) throws {
        let own = ownCertificate.withLock { $0 }.map { [$0] } ?? []
        let unshared = try (own + log.certificateRows()).filter { !certificatesShared.contains($0.bytes) }
        guard !unshared.isEmpty else { return }
        let rows = JSONValue.array(
            unshared.map {
                .object(["replica_id": .string($0.replicaID), "bytes": .string("\\x" + Hex.string($0.bytes))])
            })
        try db.execute(
            """
            INSERT INTO peersync_certificates (bytes, replica_id)
            SELECT bytes, replica_id FROM json_populate_recordset(NULL::peersync_certificates, $1)
            ON CONFLICT DO NOTHING
            """, [rows.canonicalText])
        certificatesShared.formUnion(unshared.map(\.bytes))
    }

    private static func entry(_ row: [String?]) throws -> JournalEntry {
        guard row.count == 10, let offset = row[0].flatMap({ Int64($0) }),
            let eventID = row[1].flatMap({ UUID(uuidString: $0) }), let replicaID = row[2], let scope = row[3],
            let seq = row[4].flatMap({ UInt64($0) }), let timeMs = row[5].flatMap({ Int64($0) }),
            let entityType = row[6], let entityID = row[7], let payload = row[8],
            let arrival = row[9].flatMap({ Int64($0) })
        else { throw SharedStoreError.notMirrorable("the shared store holds a malformed event row") }
        let event = Event(
            eventID: eventID, feed: FeedID(replicaID: replicaID, scope: scope), seq: seq, timeMs: timeMs,
            entityType: entityType, entityID: entityID, payload: payload)
        return JournalEntry(offset: offset, arrivalTimeMs: arrival, event: event)
    }

    private static func head(_ row: [String?]) throws -> SignedHead {
        guard row.count == 5, let replicaID = row[0], let scope = row[1], let seq = row[2].flatMap({ UInt64($0) }),
            let link = row[3].flatMap(Hex.bytes), let signature = row[4].flatMap(Hex.bytes)
        else { throw SharedStoreError.notMirrorable("the shared store holds a malformed head row") }
        return SignedHead(feed: FeedID(replicaID: replicaID, scope: scope), seq: seq, link: link, signature: signature)
    }

    // MARK: - Rows as JSON (one parameter for a whole batch)

    static func eventRows(_ events: [StoredEvent], relay: String) -> String {
        JSONValue.array(
            events.map { stored in
                let event = stored.event
                return .object([
                    "server_offset": .int(stored.offset), "event_id": .string(event.eventID.uuidString.lowercased()),
                    "replica_id": .string(event.feed.replicaID), "scope": .string(event.feed.scope),
                    "seq": .int(Int64(event.seq)), "time_ms": .int(event.timeMs),
                    "entity_type": .string(event.entityType), "entity_id": .string(event.entityID),
                    "payload": .string(event.payload), "server_time_ms": .int(stored.arrivalTimeMs),
                    "relay": .string(relay),
                ])
            }
        ).canonicalText
    }

    /// The signed heads, each at the offset of its event when the batch
    /// holds it, else at the batch's newest.
    static func headRows(_ heads: [SignedHead], events: [StoredEvent]) -> String {
        var offsets: [FeedSlot: Int64] = [:]
        for stored in events { offsets[FeedSlot(feed: stored.event.feed, seq: stored.event.seq)] = stored.offset }
        let newest = events.last?.offset ?? 0
        return JSONValue.array(
            heads.compactMap { head in
                guard let signature = head.signature else { return nil }
                return .object([
                    "replica_id": .string(head.feed.replicaID), "scope": .string(head.feed.scope),
                    "seq": .int(Int64(head.seq)), "link": .string("\\x" + Hex.string(head.link)),
                    "signature": .string("\\x" + Hex.string(signature)),
                    "server_offset": .int(offsets[FeedSlot(feed: head.feed, seq: head.seq)] ?? newest),
                ])
            }
        ).canonicalText
    }

    // MARK: - Connection

    private func connected() throws -> PostgresConnection {
        if let connection, connection.isOpen { return connection }
        connection = nil
        open = false
        do {
            let fresh = try PostgresConnection(conninfo)
            connection = fresh
            return fresh
        } catch let error as PostgresError {
            throw unavailable(error)
        }
    }

    /// The error a caller sees; a connection that broke is dropped, to be made again next time.
    private func unavailable(_ error: PostgresError) -> SharedStoreError {
        if error.connectionLost || !(connection?.isOpen ?? false) {
            connection = nil
            open = false
        }
        return .unavailable(error.description)
    }
}
