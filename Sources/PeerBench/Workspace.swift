import Foundation

/// The directory the benchmark's databases live in. Every phase makes a
/// fresh database file and removes it (with its `-wal` and `-shm`) when done.
final class Workspace {
    /// The directory.
    let path: String
    private let removeWhenFinished: Bool

    /// Uses `directory` (created when missing, kept afterwards), or a fresh
    /// temporary directory that `finish()` removes.
    init(directory: String?) throws {
        if let directory {
            path = directory
            removeWhenFinished = false
        } else {
            path = (NSTemporaryDirectory() as NSString).appendingPathComponent("peerd-bench-\(UUID().uuidString)")
            removeWhenFinished = true
        }
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    /// The path for a new database named `name`, with any leftover of an earlier run removed.
    func freshDatabase(_ name: String) -> String {
        let database = file(name)
        remove(database)
        return database
    }

    /// The path of `name` in the directory.
    func file(_ name: String) -> String { (path as NSString).appendingPathComponent(name) }

    /// A new, empty directory `name` (any leftover of an earlier run removed).
    func freshDirectory(_ name: String) throws -> String {
        let directory = file(name)
        try? FileManager.default.removeItem(atPath: directory)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return directory
    }

    /// Removes a file or directory, if it is there.
    func discard(_ item: String) { try? FileManager.default.removeItem(atPath: item) }

    /// Removes a database file and its WAL and shared-memory files.
    func remove(_ database: String) {
        for suffix in ["", "-wal", "-shm"] {
            try? FileManager.default.removeItem(atPath: database + suffix)
        }
    }

    /// Bytes a database takes on disk now, WAL included.
    func size(of database: String) -> Int64 {
        Self.fileSize(database) + Self.fileSize(database + "-wal")
    }

    /// Bytes of one file, 0 when it is missing.
    static func fileSize(_ file: String) -> Int64 {
        let attributes = try? FileManager.default.attributesOfItem(atPath: file)
        return (attributes?[.size] as? NSNumber)?.int64Value ?? 0
    }

    /// Removes the directory when this workspace made it.
    func finish() {
        if removeWhenFinished { try? FileManager.default.removeItem(atPath: path) }
    }
}

/// Writes a progress line to standard error, so standard output stays a clean Markdown report.
func progress(_ line: String) {
    FileHandle.standardError.write(Data((line + "\n").utf8))
}
