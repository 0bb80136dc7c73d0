import CSQLite

#if canImport(Glibc)
    import Glibc
#endif

/// This process's memory, as Linux reports it in `/proc/self/status`.
enum ProcessMemory {
    /// `VmHWM`: the peak resident set size, in MiB (since start or the last `resetPeak`).
    static var peakMiB: Double { field("VmHWM").map { Double($0) / 1024 } ?? .nan }

    /// `VmRSS`: the resident set size now, in MiB.
    static var residentMiB: Double { field("VmRSS").map { Double($0) / 1024 } ?? .nan }

    /// `RssFile` + `RssShmem`: resident pages mapped from files and shared
    /// memory (for SQLite, the WAL index `-shm`), in MiB.
    static var fileBackedMiB: Double {
        guard let file = field("RssFile"), let shared = field("RssShmem") else { return .nan }
        return Double(file + shared) / 1024
    }

    /// The heap SQLite holds now (page caches, statements) over every
    /// connection of the process, in MiB (`SQLITE_STATUS_MEMORY_USED`).
    static var sqliteHeapMiB: Double {
        var current: sqlite3_int64 = 0
        var highest: sqlite3_int64 = 0
        guard sqlite3_status64(SQLITE_STATUS_MEMORY_USED, &current, &highest, 0) == SQLITE_OK else { return .nan }
        return Double(current) / 1_048_576
    }

    /// Sets the peak (`VmHWM`) back to the current RSS by writing `5` to
    /// `/proc/self/clear_refs` (Linux 4.0+), so each phase reports its own
    /// peak. Returns false when the kernel refuses; peaks are then cumulative.
    @discardableResult
    static func resetPeak() -> Bool {
        let descriptor = open("/proc/self/clear_refs", O_WRONLY)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        return write(descriptor, "5", 1) == 1
    }

    /// A `kB` field of `/proc/self/status`, in KiB.
    static func field(_ name: String) -> Int? {
        guard let text = readProcFile("/proc/self/status") else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix(name + ":") {
            let digits = line.dropFirst(name.count + 1).filter(\.isNumber)
            return Int(digits)
        }
        return nil
    }
}

/// This process's storage I/O, as Linux reports it in `/proc/self/io`.
enum ProcessIO {
    /// `write_bytes`: bytes this process caused to be sent to storage so far
    /// (WAL, database and checkpoint writes alike), or nil when not reported.
    static var writtenBytes: Int64? {
        guard let text = readProcFile("/proc/self/io") else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("write_bytes:") {
            return Int64(line.dropFirst("write_bytes:".count).filter(\.isNumber))
        }
        return nil
    }
}

/// The whole of a `/proc` file (whose size is not known in advance).
private func readProcFile(_ path: String) -> String? {
    let descriptor = open(path, O_RDONLY)
    guard descriptor >= 0 else { return nil }
    defer { close(descriptor) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 4096)
    while true {
        let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        if count <= 0 { break }
        bytes += chunk[0..<count]
    }
    return String(decoding: bytes, as: UTF8.self)
}
