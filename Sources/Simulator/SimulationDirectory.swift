import Foundation

/// A fresh directory for one run's databases, removed with everything in it
/// when the run is released. It lives in `/dev/shm` when there is one: the
/// simulator checks logic, not disks, and a crash is simulated by dropping
/// the process's handles, so memory-backed files lose nothing the test needs
/// and spare the run the file system's flushes.
final class SimulationDirectory {
    let path: String

    init(seed: UInt64) throws {
        let shared = "/dev/shm"
        var isDirectory: ObjCBool = false
        let base =
            FileManager.default.fileExists(atPath: shared, isDirectory: &isDirectory) && isDirectory.boolValue
                && FileManager.default.isWritableFile(atPath: shared)
            ? shared : FileManager.default.temporaryDirectory.path
        path = "\(base)/peersync-sim-\(seed)-\(UUID().uuidString.lowercased())"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
    }

    /// Bytes of every file in the directory now (the databases, their WALs
    /// and WAL indexes); in `/dev/shm` they are memory.
    var fileBytes: Int {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
        return names.reduce(0) { total, name in
            let attributes = try? FileManager.default.attributesOfItem(atPath: "\(path)/\(name)")
            return total + ((attributes?[.size] as? NSNumber)?.intValue ?? 0)
        }
    }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }
}
