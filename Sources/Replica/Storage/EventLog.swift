import CSQLite
import Foundation

/// A replica's durable event log: one SQLite file in WAL mode holding the
/// events, the feed cursors, the projections and the quarantine.
///
/// ```swift
/// let log = try EventLog.create(at: "/var/lib/peerd/replica.db", replicaID: "tablet-7")
/// let created = try log.append(NewEvent(item: "i1", .created(name: "Bolts", quantity: 5)))
/// let bolts = try log.projection(Item.self, id: "i1")
/// ```
///
/// Not `Sendable`: one owner uses it at a time. Every write is one
/// `BEGIN IMMEDIATE` transaction that reads what it needs (feed heads, the
/// clock) inside it, so several processes can share the file.
public final class EventLog {
    /// Tunables, all with production defaults.
    public struct Options: Sendable {
        /// `FULL`: an acknowledged append survives power loss. `NORMAL`: it
        /// survives a crash of the process, not of the machine.
        public enum Durability: String, Sendable { case full = "FULL", normal = "NORMAL" }

        public var durability: Durability = .full
        /// Remote times further ahead of the wall clock do not move the local clock.
        public var maxClockSkewMs: Int64 = HybridClock.defaultMaxSkewMs
        /// At most this many consecutive undos on one entity.
        public var undoLimit: Int = 10
        /// The domains this replica folds; other entity types are stored only.
        public var domains: [Domain] = [Domain(Item.self)]
        /// The wall clock in milliseconds since 1970 (`WallClock`).
        public var wallClock: @Sendable () -> Int64 = WallClock.system.nowMs
        /// Makes the id of each local event: random version-4 UUIDs. A
        /// simulator passes a seeded source so that a run replays exactly.
        public var eventIDs: @Sendable () -> UUID = { UUID.random() }
        /// When the projection rows are written.
        public var projectionWrites = ProjectionWrites()
        /// SQLite's page cache for this connection, in KiB (`PRAGMA
        /// cache_size`). A daemon's writer keeps the default; its readers
        /// need less. 4 MiB caught up 1M events as fast as 8 MiB did, with
        /// 3 MiB less memory (docs/storage.md "Memory").
        public var pageCacheKiB = 4_096
        /// Thin-client ids `thin_client_recent` holds before they move to
        /// `thin_client_events` in one sorted pass (docs/storage.md "The
        /// thin-client index"); small in tests, to move them often.
        var thinClientRecentLimit = 8_192
        /// The WAL is copied back into the database once it holds this
        /// many pages (`PRAGMA wal_autocheckpoint`); the file keeps the
        /// size it reached. 10,000 pages (40 MiB) spare a daemon's catch-up
        /// checkpoints; a simulator running a thousand logs in memory
        /// passes fewer.
        public var walAutocheckpointPages = 10_000
        /// Opens the file for reading only (`open` alone; `create` ignores
        /// it): nothing is migrated or written, and every write fails with a
        /// `.readOnly` storage fault. For a check beside a running daemon.
        public var readOnly = false
        /// Signs the head of each feed this replica writes as it appends
        /// (docs/protocol.md "Signed feeds"); without one, its heads go unsigned.
        public var feedSigner: FeedSigner?
        /// Whose domain declarations count (docs/domains.md "Who may
        /// declare"). `nil`: as the file says (readers, tools); a replica's
        /// own opener sets it, and a change recounts every declaration.
        public var domainTrust: DomainTrust?
        /// The store this log writes through, on a relay that shares one
        /// with others (docs/relay.md "Relays on a shared PostgreSQL"):
        /// every write goes to it first. Only the writer sets it.
        public var sharedJournal: (any SharedJournal)?

        /// When the projection rows are written. Reads always see every
        /// stored event folded, whatever the rows hold (docs/storage.md).
        public struct ProjectionWrites: Sendable {
            /// A batch of fewer events writes every pending projection row
            /// in its own transaction; a larger one (a catch-up page, an
            /// import) leaves them pending in memory.
            public var deferFromBatchSize = 256
            /// Pending rows are written once this many events are pending...
            public var maxLagEvents = 20_000
            /// ...or this many entities.
            public var maxEntities = 8_192

            public init() {}

            /// Every transaction writes its projection rows.
            public static let immediate: ProjectionWrites = {
                var writes = ProjectionWrites()
                writes.deferFromBatchSize = Int.max
                return writes
            }()
        }

        public init() {}
    }

    /// The path of the database file.
    public let path: String
    /// This replica's id: the origin of the feeds it writes.
    public let replicaID: String
    /// The options the log was opened with.
    public let options: Options

    let db: SQLiteConnection
    /// The domains this log folds, by entity type: its Swift ones and the
    /// declared ones the file holds (`refreshDeclaredDomains()`).
    var domains: [String: Domain]
    /// The entity types of the Swift domains, which no declaration replaces.
    let swiftDomainTypes: Set<String>
    /// `meta.domains_generation` when `domains` was last loaded; nil: load again.
    var declaredGeneration: Int64?
    /// Whose declarations count, as the file says (`meta.domains_trust`).
    var domainTrust = DomainTrust.open
    var interned = InternedIDs()
    var writtenRows = WrittenRows()
    /// The fold of the events the projection rows do not hold yet; nil
    /// until a transaction has read it (`syncPending()`, whose `SyncedTail`
    /// the functions relying on it take).
    var pending: PendingProjections?
    /// Inside a write transaction: the local offset the next stored event
    /// takes; nil until the transaction stores one (`takeOffset()`).
    var nextOffset: Int64?
    /// The events the last write transaction on this connection stored, in
    /// the order it stored them, when it stored at most
    /// `storedByLastWriteLimit`; nil when it stored more. A writer that
    /// tells others what it committed needs no read for a few events.
    public internal(set) var storedByLastWrite: [StoredEvent]? = []
    /// The heads the last write transaction signed or stored with their
    /// signature, so that a writer can serve its newest events with their
    /// proofs from memory.
    public internal(set) var signedByLastWrite: [SignedHead] = []
    /// The blocks read last (`ReadBlockCache`).
    var keptBlocks = ReadBlockCache()
    /// Transactions open now: a read inside one joins it instead of beginning its own.
    private var transactionDepth = 0
    /// The last state hash and the `PRAGMA data_version` it was read at;
    /// dropped by every write of this log (which does not move that counter).
    var keptStateHash: (dataVersion: Int64, hex: String)?
    /// Thin-client ids this connection indexed since it last counted
    /// `thin_client_recent` (`indexThinClientEvent`).
    var thinClientIndexedSinceCheck = 0
    /// The checkpoint the fold starts from (`refreshCoveredEvents()`):
    /// entity histories leave out the events it covers, which its bases hold.
    var covered = CoveredEvents.none
    /// While mirroring a shared journal: where each of its events goes.
    var pinnedSlots: [FeedSlot: PinnedSlot]?
    /// True while the journal itself writes (a mirror), which must not go through it.
    var journalBypassed = false
    /// Inside a journaled write: the journal's newest offset, which the
    /// transaction's events follow.
    var journalHead: Int64?

    private init(path: String, db: SQLiteConnection, replicaID: String, options: Options) {
        self.path = path
        self.db = db
        self.replicaID = replicaID
        self.options = options
        self.domains = Dictionary(options.domains.map { ($0.entityType, $0) }, uniquingKeysWith: { first, _ in first })
        self.swiftDomainTypes = Set(domains.keys)
    }

    /// Creates a new database for replica `replicaID`; refuses when one exists.
    public static func create(at path: String, replicaID: String, options: Options = Options()) throws -> EventLog {
        guard !replicaID.isEmpty else { throw EventLogError.invalidEvent("a replica id must not be empty") }
        guard !FeedID.isReserved(replicaID: replicaID) else {
            throw EventLogError.invalidEvent(
                "replica ids beginning with \(FeedID.reservedReplicaIDPrefix) are the protocol's own")
        }
        if FileManager.default.fileExists(atPath: path) { throw EventLogError.alreadyExists(path: path) }
        return try withWrappedErrors(path: path) {
            let db = try SQLiteConnection(path: path, create: true)
            try configure(db, options: options)
            try db.writeTransaction {
                try migrate(db, from: 0)
                try db.execute("PRAGMA application_id = \(Schema.applicationID)")
                try db.cached("INSERT INTO meta (key, value) VALUES ('replica_id', ?), ('clock_ms', '0')")
                    .run([.text(replicaID)])
            }
            let log = EventLog(path: path, db: db, replicaID: replicaID, options: options)
            if let trust = options.domainTrust { try log.ensureDomainTrust(trust) }
            return log
        }
    }

    /// Opens an existing database, migrating an older schema; refuses a
    /// foreign, damaged or newer file without changing it.
    public static func open(at path: String, options: Options = Options()) throws -> EventLog {
        guard FileManager.default.fileExists(atPath: path) else { throw EventLogError.notFound(path: path) }
        return try withWrappedErrors(path: path) {
            let db = try SQLiteConnection(path: path, create: false, readOnly: options.readOnly)
            let version = try checkIdentity(db, path: path)
            // A statement left on a row would lock the schema against a migration.
            db.finishStatements()
            try configure(db, options: options)
            if version < Schema.currentVersion {
                guard !options.readOnly else {
                    throw EventLogError.needsMigration(path: path, found: version, current: Schema.currentVersion)
                }
                try db.writeTransaction { try migrate(db, from: version) }
            }
            let replicaID = try readMeta(db, "replica_id")
            db.finishStatements()
            guard let replicaID else {
                throw EventLogError.corrupt(path: path, reason: "the replica id is missing")
            }
            let log = EventLog(path: path, db: db, replicaID: replicaID, options: options)
            if let trust = options.domainTrust, !options.readOnly { try log.ensureDomainTrust(trust) }
            return log
        }
    }

    /// Reads `application_id` and `user_version` before anything writes.
    private static func checkIdentity(_ db: SQLiteConnection, path: String) throws -> Int {
        let applicationID = try db.scalarInt("PRAGMA application_id") ?? 0
        let version = Int(try db.scalarInt("PRAGMA user_version") ?? 0)
        guard applicationID == Schema.applicationID else {
            let tables = try db.scalarInt("SELECT count(*) FROM sqlite_master") ?? 0
            let reason =
                tables == 0
                ? "an empty SQLite file" : "an SQLite file of another application, with \(tables) schema objects"
            throw EventLogError.notAPeerSyncDatabase(path: path, reason: reason)
        }
        guard version <= Schema.currentVersion else {
            throw EventLogError.newerSchema(path: path, found: version, supported: Schema.currentVersion)
        }
        return version
    }

    private static func configure(_ db: SQLiteConnection, options: Options) throws {
        // The journal mode is the file's: a reader takes it as it is.
        if !options.readOnly { try db.execute("PRAGMA journal_mode = WAL") }
        try db.execute(
            """
            PRAGMA synchronous = \(options.durability.rawValue);
            PRAGMA cache_size = -\(max(64, options.pageCacheKiB));
            PRAGMA wal_autocheckpoint = \(max(1, options.walAutocheckpointPages));
            PRAGMA temp_store = MEMORY;
            """)
    }

    private static func migrate(_ db: SQLiteConnection, from version: Int) throws {
        for step in version..<Schema.currentVersion {
            try db.execute(Schema.migrations[step])
            try db.execute("PRAGMA user_version = \(step + 1)")
        }
    }

    static func readMeta(_ db: SQLiteConnection, _ key: String) throws -> String? {
        let statement = try db.statement("SELECT value FROM meta WHERE key = ?")
        try statement.bind([.text(key)])
        return try statement.step() ? statement.text(0) : nil
    }

    /// Runs `body`, turning SQLite failures into errors a user can act on.
    static func withWrappedErrors<T>(path: String, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch {
            throw EventLogError.wrapping(error, path: path)
        }
    }

    /// Events of one write this log keeps for `storedByLastWrite`.
    public static let storedByLastWriteLimit = 32

    /// A write transaction; the interning caches, the rows kept, the
    /// pending fold and the decoded block are dropped when it fails, since
    /// they may name rows that were rolled back. With a shared journal, it
    /// goes through the journal (`SharedJournal`).
    func write<T>(_ body: () throws -> T) throws -> T {
        if transactionDepth == 0, !journalBypassed, let journal = options.sharedJournal {
            return try journaledWrite(journal, body)
        }
        return try plainWrite(body)
    }

    /// A write transaction of this file alone; see `write`.
    func plainWrite<T>(_ body: () throws -> T) throws -> T {
        keptStateHash = nil
        nextOffset = nil
        if transactionDepth == 0 {
            storedByLastWrite = []
            signedByLastWrite = []
        }
        transactionDepth += 1
        defer {
            transactionDepth -= 1
            nextOffset = nil
        }
        return try EventLog.withWrappedErrors(path: path) {
            do {
                return try db.writeTransaction(body)
            } catch {
                interned = InternedIDs()
                declaredGeneration = nil
                storedByLastWrite = []
                signedByLastWrite = []
                writtenRows = WrittenRows()
                pending = nil
                keptBlocks = ReadBlockCache()
                throw error
            }
        }
    }

    /// A read transaction: every read inside sees one snapshot. Reads
    /// inside a read (or a write) join the transaction already open.
    func read<T>(_ body: () throws -> T) throws -> T {
        if transactionDepth > 0 { return try body() }
        transactionDepth += 1
        defer { transactionDepth -= 1 }
        return try EventLog.withWrappedErrors(path: path) { try db.readTransaction(body) }
    }

    /// Runs `body` in one read transaction, so that everything it reads
    /// describes the log at one moment (a state hash and the cursor it
    /// belongs to, say).
    ///
    /// ```swift
    /// let (cursor, hash) = try log.snapshot { (try $0.cursor(), try $0.stateHash()) }
    /// ```
    public func snapshot<T>(_ body: (EventLog) throws -> T) throws -> T {
        try read { try body(self) }
    }

    /// Writes the projection rows still pending in memory, if any. A daemon
    /// calls this when its write queue falls idle after a catch-up, so that
    /// `sqlite3` readers of the `items` view see the latest state.
    public func writePendingProjections() throws {
        guard hasPendingProjections else { return }
        try write {
            let tail = try syncPending()
            try writePending(in: tail)
        }
    }

    /// True when the projection rows do not yet hold every stored event:
    /// this log folded more than it wrote, or, on a log that has not read or
    /// written since it was opened, the file's rows lag its events (after a
    /// `kill -9` during a catch-up, say). False when the file cannot be read.
    public var hasPendingProjections: Bool {
        if let pending { return !pending.isEmpty }
        return (try? read { try projectionOffsets() }).map { $0.projected < $0.newest } ?? false
    }
}
