import Foundation

/// Which files `peerd export FILE` may write and `peerd import FILE` may
/// read: an export replaces a regular file, never a directory, and never a
/// file of the replica's own data directory (its database, key or lock).
enum ExportTarget {
    /// Throws when exporting to `path` would replace something it must not.
    static func check(_ path: String, dataDirectory: String) throws {
        var status = stat()
        guard lstat(path, &status) == 0 else { return }  // Nothing there yet: written afresh.
        try requireRegularFile(path, reading: false)
        let target = URL(fileURLWithPath: path).resolvingSymlinksInPath().standardizedFileURL
        let data = URL(fileURLWithPath: dataDirectory).resolvingSymlinksInPath().standardizedFileURL
        if target.deletingLastPathComponent().path == data.path {
            throw CommandError(
                "refusing to export to \(path): it is a file of the replica in \(dataDirectory) "
                    + "(\(target.lastPathComponent)); name a file outside the data directory")
        }
    }

    /// Throws unless `path` is a regular file (or, for an export, a symbolic link to one).
    static func requireRegularFile(_ path: String, reading: Bool) throws {
        var status = stat()
        guard stat(path, &status) == 0 else {
            if reading { throw CommandError("cannot read \(path): \(String(cString: strerror(errno)))") }
            return
        }
        let kind = status.st_mode & S_IFMT
        guard kind == S_IFREG else {
            let what = kind == S_IFDIR ? "a directory" : "not a regular file"
            throw CommandError(
                reading
                    ? "cannot import \(path): it is \(what); name an NDJSON file (docs/events.md)"
                    : "refusing to export to \(path): it is \(what); name a file")
        }
    }
}
