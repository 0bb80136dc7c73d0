import Foundation
import Gossip
import Replica
import SyncProtocol

/// The directory that holds one replica: `replica.db` (with its WAL files)
/// and `cluster.key` (mode 0600), the secret shared by the cluster.
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
        try requireReplica()
        return try EventLog.open(at: databasePath)
    }

    /// Throws, with a hint, when the directory holds no replica.
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

    /// Creates the directory, writes `clusterKey` (mode 0600) and a new
    /// replica; refuses to overwrite either. When the database cannot be
    /// created, the key file is removed again.
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
        try clusterKey.write(toFile: clusterKeyPath)
        do {
            return try EventLog.create(at: databasePath, replicaID: UUID().uuidString.lowercased())
        } catch {
            try? FileManager.default.removeItem(atPath: clusterKeyPath)
            throw error
        }
    }
}
