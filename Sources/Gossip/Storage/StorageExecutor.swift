import Dispatch
import Foundation
import Lifecycle
import Replica
import SyncProtocol
import Synchronization

/// The one owner of a replica's event log while a node runs, as GRDB's
/// `SerializedDatabase` owns its connection: every write (local appends,
/// ingests from peers, projection rows) runs on one serial writer queue,
/// and reads for peers run on two reader queues of their own, each with its
/// own connection to the file (WAL readers never wait for the writer). The
/// network never waits for any of them: work goes in with a completion,
/// and the answer comes back on the executor's queue.
///
/// - `live` reads (a few events: live pushes) never queue behind `bulk`
///   ones (catch-up pages, the state hash), so a long catch-up to one peer
///   does not delay live events to the others.
/// - A storage fault (a damaged file, a full disk, an I/O error) makes the
///   replica `degraded` (`health`) and is logged once; the network retries
///   the failed work now and then, never in a loop.
/// - Commits by other processes (an offline `peerd item`) are noticed
///   through inotify on the data directory, without polling.
/// - A file deleted or replaced under it is noticed the same way, and
///   before every write: the replica is degraded (`deleted`) and nothing
///   more is written into the unlinked file.
///
/// ```swift
/// let storage = try StorageExecutor(path: "/var/lib/peerd/replica.db", logger: log)
/// storage.observe { change in print(change.cursor) }
/// let stored = try storage.write { try $0.append(NewEvent(item: "i1", .created(name: "Bolts", quantity: 5))) }
/// storage.close()
/// ```
///
/// `@unchecked Sendable`: each `EventLog` is used on its own queue only
/// (`writer` for `log`, each lane's queue for its log); `observers` and
/// `health` are guarded by mutexes.
public final class StorageExecutor: Service, @unchecked Sendable {
    /// A commit that moved the cursor, or any commit of another process.
    public struct Change: Sendable {
        public enum Origin: Sendable {
            /// `write` in this process (an HTTP request, an app).
            case local
            /// A `.store` for a peer.
            case ingest
            /// Another process committed to the file.
            case external
        }

        public var origin: Origin
        /// The cursor after the commit.
        public var cursor: VectorCursor
        /// Events the commit stored.
        public var storedCount: Int
        /// The events the commit stored, in arrival order: for an ingest,
        /// and for a local commit of at most
        /// `EventLog.storedByLastWriteLimit` events (else empty).
        public var stored: [StoredEvent] = []
        /// The heads the commit signed or stored signed, with `stored`.
        public var signed: [SignedHead] = []
        /// For `.external`: certificates the other process stored that this
        /// executor had not seen (a `peerd import` keeps the file's).
        public var certificates: [Certificate] = []
    }

    public let name = "storage"
    /// The path of the database file.
    public let path: String
    public let replicaID: String
    private let log: EventLog
    private let writer = DispatchQueue(label: "peersync.storage.writer")
    private let live: ReaderLane
    private let bulk: ReaderLane
    private let logger: @Sendable (LogRecord) -> Void
    private let observers = Mutex<[@Sendable (Change) -> Void]>([])
    private let healthState = Mutex(StorageHealth())
    private let closed = Atomic<Bool>(false)
    private var externalWrites: ExternalWrites?
    /// The writer's cursor after its last commit (writer queue only).
    private var cursorAfterLastCommit: VectorCursor
    /// `PRAGMA data_version` at the last look (writer queue only).
    private var dataVersion: Int64
    /// The bytes of every certificate the log held at the last look, or
    /// that this executor kept (writer queue only).
    private var certificatesSeen: Set<[UInt8]>
    /// The device and inode of the file opened; another at `path` (or none)
    /// means it was deleted or replaced while open.
    private let fileIdentity: (device: UInt64, inode: UInt64)?

    /// Reads of at most this many events go to the live lane.
    static let liveReadEvents = 512
    /// Stores of at least this many events are a catch-up: they run at a
    /// lower CPU priority (`CatchUpWorker`), still in the writer's order.
    static let catchUpStoreEvents = 1_000
    /// Runs the catch-up stores for the writer.
    private let catchUpStores = CatchUpWorker(name: "peersync-catch-up-stores")

    /// Opens the log at `path` (migrating an older schema) and two readers of it.
    public init(
        path: String, options: EventLog.Options = EventLog.Options(),
        logger: @escaping @Sendable (LogRecord) -> Void = { _ in }
    ) throws {
        self.path = path
        self.logger = logger
        log = try EventLog.open(at: path, options: options)
        replicaID = log.replicaID
        // The readers serve pages and cursors; a quarter of the writer's page cache is enough for them.
        var readerOptions = options
        readerOptions.pageCacheKiB = max(64, options.pageCacheKiB / 4)
        live = ReaderLane(name: "live", log: try EventLog.open(at: path, options: readerOptions))
        bulk = ReaderLane(name: "bulk", log: try EventLog.open(at: path, options: readerOptions), catchUp: true)
        cursorAfterLastCommit = try log.cursor()
        dataVersion = try log.externalChangeCounter()
        certificatesSeen = Set(try log.certificates())
        fileIdentity = Self.identity(of: path)
        externalWrites = ExternalWrites(databasePath: path) { [weak self] in self?.checkExternalWrites() }
    }

    deinit {
        close()
    }

    /// The wall clock the log stamps events with: the daemon's one clock.
    public var clock: WallClock { WallClock(log.options.wallClock) }

    /// Whether the database works; see `StorageHealth`.
    public var health: StorageHealth { healthState.withLock { $0 } }

    /// Calls `observer` (on the writer's queue) after every commit that
    /// moved the cursor: local, for a peer, or by another process.
    public func observe(_ observer: @escaping @Sendable (Change) -> Void) {
        observers.withLock { $0.append(observer) }
    }

    /// Runs `body` with the log on the writer's queue and waits for it.
    /// A commit in it that moves the cursor reaches the observers (the sync
    /// node pushes it to the peers at once).
    @discardableResult
    public func write<T>(_ body: (EventLog) throws -> T) throws -> T {
        try writer.sync {
            if let refusal = deletedFileRefusal() { throw refusal }
            do {
                let result = try body(log)
                noteCommit(origin: .local)
                recovered()
                return result
            } catch {
                noteFailure(error)
                throw error
            }
        }
    }

    /// Runs `body` with a reader connection (the live lane) and waits for
    /// it: a read never waits for the writer.
    ///
    /// ```swift
    /// let bolts = try storage.read { try $0.projection(Item.self, id: "i1") }
    /// ```
    public func read<T: Sendable>(_ body: @escaping @Sendable (EventLog) throws -> T) throws -> T {
        do {
            return try live.runAndWait(body)
        } catch {
            noteFault(error, while: "read")
            throw error
        }
    }

    /// Records `error` as a storage fault (the replica degraded, logged
    /// once) when it is one, as the executor's own reads and writes do;
    /// other errors are the caller's and change nothing. For a reader that
    /// has its own connection to the file, such as the daemon's HTTP API.
    public func noteFault(_ error: any Error, while what: String) {
        guard StorageHealth.fault(of: (error as? StorageFailure)?.cause ?? error) != nil else { return }
        noteFailure(error, what: what)
    }

    /// The cursor as of the last commit this executor saw.
    public func cursor() -> VectorCursor {
        writer.sync { cursorAfterLastCommit }
    }

    // MARK: - Work for a sync node (answers on the executor's queues)

    /// A page of events for a peer; `.live` lane for a few events, else `.bulk`.
    func read(
        _ ranges: [FeedRange], maxEvents: Int, maxBytes: Int,
        completion: @escaping @Sendable (Result<EventPage, StorageFailure>) -> Void
    ) {
        let wanted = ranges.reduce(0) { $0 + Int(clamping: $1.seqs.count) }
        let lane = min(wanted, maxEvents) <= Self.liveReadEvents ? live : bulk
        lane.run { log in
            let page = StorageExecutor.readServingWhatIsReadable(log, ranges, maxEvents: maxEvents, maxBytes: maxBytes)
            if case .failure(let failure) = page { self.noteFailure(failure, what: "read events") }
            completion(page)
        }
    }

    /// A page; when the file is damaged somewhere in it, the longest
    /// shorter page that can still be read (halving down to one event), so
    /// a peer still gets the events before the damage.
    private static func readServingWhatIsReadable(
        _ log: EventLog, _ ranges: [FeedRange], maxEvents: Int, maxBytes: Int
    ) -> Result<EventPage, StorageFailure> {
        var limit = maxEvents
        var page = LogStorage.read(log, ranges: ranges, maxEvents: limit, maxBytes: maxBytes)
        while case .failure(let failure) = page, limit > 1,
            StorageHealth.fault(of: failure.cause ?? failure)?.kind == .damaged
        {
            limit /= 2
            page = LogStorage.read(log, ranges: ranges, maxEvents: limit, maxBytes: maxBytes)
        }
        return page
    }

    /// Ingests batches from a peer in one transaction.
    func store(
        _ batches: [EventBatch], keys: FeedKeys?,
        completion: @escaping @Sendable (Result<StoreOutcome, StorageFailure>) -> Void
    ) {
        writer.async { [self] in
            guard !closed.load(ordering: .acquiring) else {
                return completion(.failure(StorageFailure("the replica is shutting down")))
            }
            if let refusal = deletedFileRefusal() { return completion(.failure(StorageFailure(refusal))) }
            let count = batches.reduce(0) { $0 + $1.events.count }
            let outcome =
                count >= Self.catchUpStoreEvents
                ? catchUpStores.run { [log] in LogStorage.store(log, batches, keys: keys) }
                : LogStorage.store(log, batches, keys: keys)
            switch outcome {
            case .success(let done):
                // A write through a shared store first mirrors what other relays committed.
                let mirrored =
                    Int(clamping: cursorAfterLastCommit.missingCount(from: done.cursor)) - done.report.stored.count
                cursorAfterLastCommit = done.cursor
                dataVersion = (try? log.externalChangeCounter()) ?? dataVersion
                recovered()
                if !done.report.stored.isEmpty {
                    notify(
                        Change(
                            origin: .ingest, cursor: done.cursor, storedCount: done.report.stored.count,
                            stored: done.report.stored, signed: done.signed))
                }
                // And the certificates of the events it mirrored, which the node passes on before them.
                let shared = log.options.sharedJournal == nil ? [] : certificatesStoredElsewhere()
                if mirrored > 0 || !shared.isEmpty {
                    notify(
                        Change(
                            origin: .external, cursor: done.cursor, storedCount: max(0, mirrored),
                            certificates: shared))
                }
            case .failure(let failure):
                noteFailure(failure, what: "store events")
            }
            completion(outcome)
        }
    }

    /// Mirrors what the other relays of the log's shared store committed
    /// (docs/relay.md "Relays on a shared PostgreSQL"), on the writer, and
    /// waits; the observers hear of the events as of another process's.
    /// Throws when the store cannot be reached; does nothing without one.
    public func catchUpSharedStore() throws {
        try writer.sync {
            guard !closed.load(ordering: .acquiring), let journal = log.options.sharedJournal else { return }
            if let refusal = deletedFileRefusal() { throw refusal }
            // Certificates other relays shared come with the events they verify.
            defer { noteCommit(origin: .external, certificates: certificatesStoredElsewhere()) }
            _ = try journal.catchUp(log)
        }
    }

    /// The state summary and its cursor, on the bulk lane.
    func computeState(completion: @escaping @Sendable (Result<StateReport, StorageFailure>) -> Void) {
        bulk.run { log in
            let report = LogStorage.computeState(log)
            if case .failure(let failure) = report { self.noteFailure(failure, what: "hash the state") }
            completion(report)
        }
    }

    /// The forks a peer's signed heads prove, quarantined, on the writer.
    func compare(
        _ heads: [SignedHead], keys: FeedKeys,
        completion: @escaping @Sendable (Result<[ForkProof], StorageFailure>) -> Void
    ) {
        writer.async { [self] in
            if let refusal = deletedFileRefusal() { return completion(.failure(StorageFailure(refusal))) }
            let proofs = LogStorage.compare(log, heads, keys: keys)
            if case .failure(let failure) = proofs { noteFailure(failure, what: "compare heads") }
            completion(proofs)
        }
    }

    /// Keeps certificates learned from peers, on the writer.
    func keep(_ certificates: [Certificate]) {
        writer.async { [self] in
            guard !closed.load(ordering: .acquiring), deletedFileRefusal() == nil else { return }
            if let failure = LogStorage.keep(log, certificates) {
                noteFailure(failure, what: "keep certificates")
            } else {
                certificatesSeen.formUnion(certificates.map(\.bytes))
            }
        }
    }

    /// Removes the kept certificates `retention` finds no longer needed
    /// (docs/identity.md, "Pruned certificates"), on the writer, and logs
    /// how many; returns them.
    @discardableResult
    public func pruneCertificates(_ retention: CertificateRetention) throws -> [Certificate] {
        try writer.sync {
            if let refusal = deletedFileRefusal() { throw refusal }
            let kept = try log.certificates().compactMap { try? Certificate(bytes: $0) }
            let prune = retention.prunable(kept, feedOrigins: try log.feedOrigins())
            guard !prune.isEmpty else { return [] }
            try log.removeCertificates(prune.map(\.bytes))
            certificatesSeen.subtract(prune.map(\.bytes))
            let replicas = Set(prune.map(\.replicaID)).sorted().joined(separator: ",")
            logger(
                LogRecord(
                    .info, .certificatesPruned, "pruned certificates of revoked or long-expired replicas",
                    [("count", "\(prune.count)"), ("replicas", replicas)]))
            return prune
        }
    }

    /// Quarantines the feeds of fork proofs a peer sent, on the writer.
    func quarantine(_ proofs: [ForkProof], keys: FeedKeys) {
        writer.async { [self] in
            guard !closed.load(ordering: .acquiring), deletedFileRefusal() == nil else { return }
            if let failure = LogStorage.quarantine(log, proofs, keys: keys) {
                noteFailure(failure, what: "quarantine a feed")
            }
        }
    }

    /// The storage work of checkpoints, on the writer (a start or a drop
    /// rewrites the log; a take refolds entities); `completion` gets the
    /// answer, if the work has one.
    func checkpointWork(_ effect: SyncNode.Effect, completion: @escaping @Sendable (StorageAnswer) -> Void) {
        writer.async { [self] in
            guard !closed.load(ordering: .acquiring) else { return }
            if let refusal = deletedFileRefusal() {
                noteFailure(refusal)
                return
            }
            guard let answer = DirectStorage.execute(effect, on: log) else { return }
            if case .startedFromCheckpoint(.success(let started)) = answer {
                cursorAfterLastCommit = started.cursor
                dataVersion = (try? log.externalChangeCounter()) ?? dataVersion
            }
            completion(answer)
        }
    }

    /// Writes the projection rows still pending, on the writer.
    func writePendingProjections() {
        writer.async { [self] in
            guard !closed.load(ordering: .acquiring), deletedFileRefusal() == nil else { return }
            if let failure = LogStorage.writePendingProjections(log) {
                noteFailure(failure, what: "write projections")
            }
        }
    }

    /// Serves until its task is cancelled, then closes (a group stops it
    /// last, after everything that writes through it).
    public func run() async throws {
        await Cancellation.wait()
        close()
    }

    /// Stops watching for other processes, writes the pending projection
    /// rows and waits for the work in flight. Safe to call more than once.
    public func close() {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        externalWrites?.stop()
        writer.sync {
            guard deletedFileRefusal() == nil else { return }
            if let failure = LogStorage.writePendingProjections(log) {
                logger(
                    LogRecord(
                        .error, .storageFailed, "cannot write projections",
                        [("while", "project"), ("error", failure.message)]))
            }
        }
        live.drain()
        bulk.drain()
        bulk.stop()
        catchUpStores.stop()
    }

    // MARK: - Writer queue

    /// After a commit: the observers hear of a cursor that moved.
    private func noteCommit(origin: Change.Origin, certificates: [Certificate] = []) {
        // A write through a shared store may have mirrored other relays' certificates first.
        let certificates =
            certificates.isEmpty && log.options.sharedJournal != nil ? certificatesStoredElsewhere() : certificates
        guard let cursor = try? log.cursor() else { return }
        dataVersion = (try? log.externalChangeCounter()) ?? dataVersion
        guard cursor != cursorAfterLastCommit || !certificates.isEmpty else { return }
        let stored = Int(clamping: cursorAfterLastCommit.missingCount(from: cursor))
        // What the log says this write stored, when that is all the cursor moved by.
        let events = log.storedByLastWrite.flatMap { $0.count == stored ? $0 : nil } ?? []
        cursorAfterLastCommit = cursor
        notify(
            Change(
                origin: origin, cursor: cursor, storedCount: stored, stored: events,
                signed: events.isEmpty ? [] : log.signedByLastWrite, certificates: certificates))
    }

    /// Another process may have committed: `data_version` tells.
    private func checkExternalWrites() {
        writer.async { [self] in
            guard !closed.load(ordering: .acquiring), deletedFileRefusal() == nil,
                let version = try? log.externalChangeCounter(),
                version != dataVersion
            else { return }
            dataVersion = version
            let certificates = certificatesStoredElsewhere()
            // Told even when the cursor stayed: the commit may have signed runs held here (an import's heads).
            guard let cursor = try? log.cursor() else { return }
            let stored = Int(clamping: cursorAfterLastCommit.missingCount(from: cursor))
            cursorAfterLastCommit = cursor
            notify(Change(origin: .external, cursor: cursor, storedCount: stored, certificates: certificates))
        }
    }

    /// The certificates in the log this executor has not seen yet (the
    /// few rows of `certificates`, read after another process committed).
    private func certificatesStoredElsewhere() -> [Certificate] {
        guard let all = try? log.certificates() else { return [] }
        let fresh = all.filter { !certificatesSeen.contains($0) }
        certificatesSeen.formUnion(fresh)
        // A certificate that no longer reads (a format this build does not know) is left out, as at start.
        return fresh.compactMap { try? Certificate(bytes: $0) }
    }

    private func notify(_ change: Change) {
        for observer in observers.withLock({ $0 }) { observer(change) }
    }

    // MARK: - Health (any queue)

    private func noteFailure(_ error: any Error, what: String? = nil) {
        let underlying = (error as? StorageFailure)?.cause ?? error
        guard let fault = StorageHealth.fault(of: underlying) else {
            // Not the file's fault (a busy database, say): worth a line each time; sync tries again later.
            if let what {
                logger(
                    LogRecord(
                        .warning, .storageFailed, "cannot \(what)", [("while", what), ("error", "\(underlying)")]))
            }
            return
        }
        let entered = healthState.withLock { health -> Bool in
            health.faults += 1
            guard health.fault == nil else { return false }
            health.fault = fault
            health.sinceMs = log.options.wallClock()
            return true
        }
        guard entered else { return }
        logger(
            LogRecord(
                .error, .storageDegraded, "storage degraded",
                [("fault", fault.kind.rawValue), ("while", what ?? "write"), ("error", fault.description)]))
    }

    /// The refusal of every write once the file is deleted or replaced
    /// (`StorageFault.Kind.deleted`, which never heals: the connection
    /// still has the old file open), noted as a fault the first time.
    private func deletedFileRefusal() -> EventLogError? {
        if let fault = healthState.withLock({ $0.fault }), fault.kind == .deleted {
            return .storageFailed(fault)
        }
        guard let fileIdentity else { return nil }
        let detail: String
        if let now = Self.identity(of: path) {
            guard now != fileIdentity else { return nil }
            detail = "another file is at its path now"
        } else {
            guard errno == ENOENT || errno == ENOTDIR else { return nil }
            detail = "no file is at its path any more"
        }
        let refusal = EventLogError.storageFailed(StorageFault(kind: .deleted, path: path, detail: detail))
        noteFailure(refusal, what: "check the file")
        return refusal
    }

    /// The device and inode of the file at `path`, or nil (with `errno`)
    /// when there is none.
    private static func identity(of path: String) -> (device: UInt64, inode: UInt64)? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return (UInt64(info.st_dev), UInt64(info.st_ino))
    }

    /// A write succeeded: a fault that heals (a full disk, say) is over.
    private func recovered() {
        let was = healthState.withLock { health -> StorageFault? in
            guard let fault = health.fault, StorageHealth.heals(fault) else { return nil }
            health.fault = nil
            health.sinceMs = nil
            return fault
        }
        if let was { logger(LogRecord(.info, .storageRecovered, "storage recovered", [("fault", was.kind.rawValue)])) }
    }
}

/// One reader connection and the thread its reads run on: a serial queue,
/// or for catch-up pages a `CatchUpWorker` at a lower CPU priority.
///
/// `@unchecked Sendable`: `log` is used on `queue` (or the worker's thread) only.
private final class ReaderLane: @unchecked Sendable {
    // `log` is used on `queue` (or `worker`) only.
    private let queue: DispatchQueue
    private let worker: CatchUpWorker?
    private let log: EventLog

    init(name: String, log: EventLog, catchUp: Bool = false) {
        self.queue = DispatchQueue(label: "peersync.storage.\(name)")
        self.worker = catchUp ? CatchUpWorker(name: "peersync-catch-up-reads") : nil
        self.log = log
    }

    func run(_ body: @escaping @Sendable (EventLog) -> Void) {
        if let worker {
            worker.async { [self] in body(log) }
        } else {
            queue.async { [self] in body(log) }
        }
    }

    /// Runs `body` on the lane and waits for its result.
    func runAndWait<T>(_ body: @escaping (EventLog) throws -> T) throws -> T {
        if let worker { return try worker.run { [log] in try body(log) } }
        return try queue.sync { try body(log) }
    }

    /// Waits for the work already queued.
    func drain() {
        if let worker { worker.run {} } else { queue.sync {} }
    }

    /// Ends the lane's catch-up thread, if it has one.
    func stop() {
        worker?.stop()
    }
}
