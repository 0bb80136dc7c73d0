import Foundation

extension SyncDaemon {
    /// Bytes its log (standard error) holds now: where a window of log
    /// lines to count later starts.
    var logOffset: UInt64 {
        let attributes = try? FileManager.default.attributesOfItem(atPath: logPath)
        return (attributes?[.size] as? NSNumber)?.uint64Value ?? 0
    }

    /// The complete lines its log gained since `offset`.
    ///
    /// ```swift
    /// let start = daemon.logOffset
    /// attack()
    /// let refused = daemon.logLines(since: start).filter { $0.contains(#"msg="connection refused""#) }
    /// ```
    func logLines(since offset: UInt64) -> [Substring] {
        guard let handle = FileHandle(forReadingAtPath: logPath) else { return [] }
        defer { try? handle.close() }
        guard (try? handle.seek(toOffset: offset)) != nil, let data = try? handle.readToEnd() else { return [] }
        let text = String(decoding: data, as: UTF8.self)
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        // The last piece is an unfinished line (or empty after the final newline).
        lines.removeLast()
        return lines
    }
}

extension ChildStats {
    /// How many descriptors the process has open (`/proc/<pid>/fd`), nil when it cannot be read.
    static func openDescriptors(pid: Int32) -> Int? {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd"))?.count
    }

    /// Its soft limit of open files (`Max open files` in `/proc/<pid>/limits`).
    static func openFilesLimit(pid: Int32) -> Int? {
        guard let limits = try? String(contentsOfFile: "/proc/\(pid)/limits", encoding: .utf8) else { return nil }
        let line = limits.split(separator: "\n").first { $0.hasPrefix("Max open files") }
        return line?.dropFirst("Max open files".count).split(separator: " ").first.flatMap { Int($0) }
    }
}
