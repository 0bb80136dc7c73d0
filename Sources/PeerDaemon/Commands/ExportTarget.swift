import Foundation

/// Which files `peerd export FILE` may replace: a regular file, never a
/// directory, and never a file of the replica's own data directory (its
/// database, key or lock).
enum ExportTarget {
    /// Throws when exporting to `path` would replace something it must not.
    static func check(_ path: String, dataDirectory: String) throws {
        var status = stat()
        guard stat(path, &status) == 0 else { return }  // Nothing there yet: written afresh.
        guard status.st_mode & S_IFMT == S_IFREG else {
            throw CommandError("refusing to export to \(path): it is \(kind(of: status)); name a file")
        }
        let target = URL(fileURLWithPath: path).resolvingSymlinksInPath().standardizedFileURL
        let data = URL(fileURLWithPath: dataDirectory).resolvingSymlinksInPath().standardizedFileURL
        if target.deletingLastPathComponent().path == data.path {
            throw CommandError(
                "refusing to export to \(path): it is a file of the replica in \(dataDirectory) "
                    + "(\(target.lastPathComponent)); name a file outside the data directory")
        }
    }

    /// What a path that is not a regular file is, in an error message.
    static func kind(of status: stat) -> String {
        status.st_mode & S_IFMT == S_IFDIR ? "a directory" : "not a regular file"
    }
}
