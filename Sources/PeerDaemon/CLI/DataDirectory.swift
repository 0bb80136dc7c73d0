import Foundation
import Gossip
import Replica
import SharedStore
import SyncProtocol

/// The directory that holds one replica: `replica.db` (with its WAL files),
/// `cluster.key` (mode 0600), the secret shared by the cluster, and
/// `identity.key` (mode 0600), the replica's own signing key.
struct DataDirectory: Sendable {
    let path: String

    /// `--data DIR`, else `$PEERD_DATA`, else `./peerd-data`.
    init(option: String?, environment: [String: String] = ProcessInfo.processInfo.environment) {
        path = option ?? environment["PEERD_DATA"] ?? "./peerd-data"
    }

    var databasePath: String { (path as NSString).appendingPathComponent("replica.db") }

    /// The 32-byte cluster key, mode 0600.
    var clusterKeyPath: String { (path as NSString).appendingPathComponent("cluster.key") }

    /// Opens the replica's event log, with a hint when there is none.
    func openLog() throws -> EventLog {
        let options = try logOptions()
        return try opening { try EventLog.open(at: databasePath, options: options) }
    }

    /// The log's options: local writes signed with the identity key.
    private func logOptions() throws -> EventLog.Options {
        try requireReplica()
        var options = EventLog.Options()
        options.feedSigner = FeedSigner(try identityKey())
        // A cluster's admin key decides whose domain declarations count (docs/domains.md "Who may declare").
        options.domainTrust = try certificate().map { .admin($0.adminKey) } ?? .open
        return options
    }

    /// Opens the replica's storage for a daemon (`StorageExecutor`).
    /// With `sharedStore`, the log writes through it (docs/relay.md "Relays
    /// on a shared PostgreSQL"): a log not yet attached to it is attached
    /// first, which needs the store; one attached before opens while the
    /// store is down, and refuses writes until it is back.
    func openStorage(
        clock: WallClock = .system, sharedStore: SiteJournal? = nil, cluster: String = "",
        logger: @escaping @Sendable (LogRecord) -> Void
    ) throws -> StorageExecutor {
        var options = try logOptions()
        options.wallClock = clock.nowMs
        if let journal = sharedStore {
            try opening {
                let log = try EventLog.open(at: databasePath, options: options)
                let attached = try log.sharedStoreID()
                do {
                    try journal.attach(log, cluster: cluster)
                } catch SharedStoreError.unavailable(let reason) where attached != nil {
                    logger(
                        LogRecord(
                            .warning, .sharedStoreUnreachable, "the shared store is unreachable; writes wait for it",
                            [("store", attached!), ("error", reason)]))
                }
            }
            options.sharedJournal = journal
        }
        return try opening { try StorageExecutor(path: databasePath, options: options, logger: logger) }
    }

    /// Runs `open` with a hint when the directory holds no replica, and in
    /// a person's words when the disk is full.
    private func opening<T>(_ open: () throws -> T) throws -> T {
        try requireReplica()
        do {
            return try open()
        } catch let error as EventLogError where error.storageFault?.kind == .diskFull {
            // Opening writes SQLite's -wal and -shm files when they are missing.
            throw CommandError("cannot open \(databasePath): the disk is full; free some space and start again")
        }
    }

    /// Throws, with the hint to run `peerd init`, when DIR holds no replica.
    func requireReplica() throws {
        guard FileManager.default.fileExists(atPath: databasePath) else {
            throw CommandError("no replica in \(path); run `peerd init --data \(path)` first")
        }
    }

    /// Reads the cluster key, with a hint when there is none.
    func readClusterKey() throws -> ClusterKey {
        do {
            return try ClusterKey.read(fromFile: clusterKeyPath)
        } catch KeyFileError.missing {
            throw CommandError(
                "no cluster key in \(path) (\(clusterKeyPath)); run `peerd init --data \(path)` for a new replica, "
                    + "or copy cluster.key from a member of the cluster and `chmod 600` it")
        }
    }

    /// Creates the directory, writes `clusterKey` (mode 0600), a new
    /// identity key and a new replica; refuses to overwrite any of them.
    /// When the database cannot be created, the key files are removed again.
    func initialize(clusterKey: ClusterKey) throws -> EventLog {
        if FileManager.default.fileExists(atPath: databasePath) {
            throw CommandError("\(path) already holds a replica (\(databasePath)); refusing to overwrite it")
        }
        if FileManager.default.fileExists(atPath: clusterKeyPath) {
            throw CommandError(
                "\(path) already holds a cluster key (\(clusterKeyPath)) but no replica; refusing to overwrite it. "
                    + "Move it away to start over")
        }
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        } catch {
            throw CommandError("cannot create \(path): \(error.localizedDescription)")
        }
        if FileManager.default.fileExists(atPath: identityKeyPath) {
            throw CommandError(
                "\(path) already holds an identity key (\(identityKeyPath)) but no replica; refusing to overwrite "
                    + "it. Move it away to start over")
        }
        try clusterKey.write(toFile: clusterKeyPath)
        do {
            try SigningKey.generate().write(toFile: identityKeyPath)
            return try EventLog.create(at: databasePath, replicaID: UUID().uuidString.lowercased())
        } catch {
            try? FileManager.default.removeItem(atPath: clusterKeyPath)
            try? FileManager.default.removeItem(atPath: identityKeyPath)
            throw error
        }
    }
}

extension DataDirectory {
    /// Writes `bytes` as the file `name` in the directory: to
    /// `name.partial`, then renamed into place, so a reader never sees half
    /// a file. On failure the partial file is removed and the error says
    /// what to do ("… the disk is full …; free some space and start again").
    func replaceFile(named name: String, with bytes: [UInt8]) throws {
        let target = (path as NSString).appendingPathComponent(name)
        let partial = target + ".partial"
        let descriptor = open(partial, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw CommandError.cannotWrite(target, errno: errno) }
        var failure = bytes.withUnsafeBytes { Self.writeAll($0, to: descriptor, at: 0) }
        if close(descriptor) != 0 && failure == 0 { failure = errno }
        if failure == 0 && rename(partial, target) != 0 { failure = errno }
        guard failure == 0 else {
            unlink(partial)
            throw CommandError.cannotWrite(target, errno: failure)
        }
    }

    /// Writes all of `bytes` at `offset` of `descriptor`, retrying
    /// interrupted and short writes; returns 0, or the `errno` of the
    /// write that failed.
    static func writeAll(_ bytes: UnsafeRawBufferPointer, to descriptor: Int32, at offset: off_t) -> Int32 {
        var done = 0
        while done < bytes.count {
            let count = pwrite(descriptor, bytes.baseAddress! + done, bytes.count - done, offset + off_t(done))
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return count < 0 ? errno : EIO }
            done += count
        }
        return 0
    }
}

extension CommandError {
    /// A file of the data directory that could not be written: the file,
    /// the system's reason, and what to do.
    ///
    /// ```swift
    /// CommandError.cannotWrite("/var/lib/peerd/daemon.json", errno: ENOSPC)
    /// // cannot write /var/lib/peerd/daemon.json: the disk is full (No space left on device); free some space and start again
    /// ```
    static func cannotWrite(_ path: String, errno code: Int32) -> CommandError {
        let reason = String(cString: strerror(code))
        let directory = (path as NSString).deletingLastPathComponent
        switch code {
        case ENOSPC, EDQUOT:
            return CommandError("cannot write \(path): the disk is full (\(reason)); free some space and start again")
        case EROFS:
            return CommandError(
                "cannot write \(path): the file system is read-only (\(reason)); make it writable and start again")
        case EACCES, EPERM:
            return CommandError(
                "cannot write \(path): permission denied (\(reason)); make \(directory) writable for this user "
                    + "and start again")
        case EIO:
            return CommandError(
                "cannot write \(path): the disk reported an I/O error (\(reason)); check the disk (dmesg), then "
                    + "run `peerd check`")
        default:
            return CommandError("cannot write \(path): \(reason)")
        }
    }
}
