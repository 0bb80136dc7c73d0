import Foundation
import Replica

/// The directory that holds one replica: `replica.db` (with its WAL files).
struct DataDirectory: Sendable {
    let path: String

    /// `--data DIR`, else `$PEERD_DATA`, else `./peerd-data`.
    init(option: String?, environment: [String: String] = ProcessInfo.processInfo.environment) {
        path = option ?? environment["PEERD_DATA"] ?? "./peerd-data"
    }

    var databasePath: String { (path as NSString).appendingPathComponent("replica.db") }

    /// Opens the replica's event log, with a hint when there is none.
    func openLog() throws -> EventLog {
        guard FileManager.default.fileExists(atPath: databasePath) else {
            throw CommandError("no replica in \(path); run `peerd init --data \(path)` first")
        }
        return try EventLog.open(at: databasePath)
    }

    /// Creates the directory and a new replica; refuses to overwrite one.
    func initialize() throws -> EventLog {
        if FileManager.default.fileExists(atPath: databasePath) {
            throw CommandError("\(path) already holds a replica (\(databasePath)); refusing to overwrite it")
        }
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        } catch {
            throw CommandError("cannot create \(path): \(error.localizedDescription)")
        }
        return try EventLog.create(at: databasePath, replicaID: UUID().uuidString.lowercased())
    }
}
