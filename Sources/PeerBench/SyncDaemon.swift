import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// One `peerd` child process: started with its standard error in a log
/// file, observed through `/proc/<pid>`, stopped with SIGTERM.
final class SyncDaemon {
    /// For messages, e.g. `A (source)`.
    let name: String
    let process: Process
    /// Where its standard error goes.
    let logPath: String
    private let output: Pipe
    private var pendingOutput: [UInt8] = []

    /// Starts `peerd arguments...`.
    init(name: String, peerd: String, arguments: [String], logPath: String) throws {
        self.name = name
        self.logPath = logPath
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        guard let log = FileHandle(forWritingAtPath: logPath) else {
            throw SyncDaemonError("cannot write \(logPath)")
        }
        output = Pipe()
        process = Process()
        process.executableURL = URL(fileURLWithPath: peerd)
        process.arguments = arguments
        process.standardOutput = output
        process.standardError = log
        process.standardInput = FileHandle.nullDevice
        try process.run()
        try? log.close()
    }

    /// Runs `peerd arguments...` to completion; throws with its output when it fails.
    static func runToCompletion(peerd: String, arguments: [String], logPath: String) throws {
        let daemon = try SyncDaemon(
            name: "peerd \(arguments.first ?? "")", peerd: peerd, arguments: arguments, logPath: logPath)
        daemon.process.waitUntilExit()
        guard daemon.process.terminationStatus == 0 else {
            throw SyncDaemonError(
                "`peerd \(arguments.joined(separator: " "))` exited with \(daemon.process.terminationStatus): "
                    + daemon.logTail())
        }
    }

    var pid: Int32 { process.processIdentifier }

    /// Reads standard output until a line starting with `prefix` arrives; returns the rest of that line.
    func waitForLine(startingWith prefix: String, seconds: Double) throws -> String {
        try waitForLines(startingWith: [prefix], seconds: seconds)[0]
    }

    /// Reads standard output until a line starting with each of `prefixes`
    /// arrived, in any order; returns the rest of each line, in the order of `prefixes`.
    func waitForLines(startingWith prefixes: [String], seconds: Double) throws -> [String] {
        let descriptor = output.fileHandleForReading.fileDescriptor
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        var found: [String?] = Array(repeating: nil, count: prefixes.count)
        while true {
            while let newline = pendingOutput.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: pendingOutput[..<newline], as: UTF8.self)
                pendingOutput.removeSubrange(...newline)
                if let index = prefixes.indices.first(where: { found[$0] == nil && line.hasPrefix(prefixes[$0]) }) {
                    found[index] = String(line.dropFirst(prefixes[index].count))
                }
            }
            if !found.contains(nil) { return found.compactMap { $0 } }
            let remaining = deadline - ContinuousClock.now
            guard remaining > .zero else {
                let missing = prefixes.indices.filter { found[$0] == nil }.map { "`\(prefixes[$0])`" }
                throw SyncDaemonError(
                    "\(name) printed no \(missing.joined(separator: " or ")) line within \(seconds) s: \(logTail())")
            }
            var request = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let ready = poll(&request, 1, Int32(min(remaining.seconds * 1000 + 1, 1000)))
            if ready <= 0 { continue }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            guard count > 0 else { throw SyncDaemonError("\(name) closed its output: \(logTail())") }
            pendingOutput += chunk[..<count]
        }
    }

    /// Throws when the process is gone (with its last log lines).
    func checkRunning() throws {
        guard process.isRunning else {
            throw SyncDaemonError("\(name) exited with \(process.terminationStatus): \(logTail())")
        }
    }

    /// What `/proc/<pid>` says now.
    func sample() -> ChildStats { ChildStats(pid: pid) }

    /// SIGTERM, then waits up to `seconds` for the exit (SIGKILL after that).
    func stop(seconds: Double = 20) {
        guard process.isRunning else { return }
        process.terminate()
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while process.isRunning && ContinuousClock.now < deadline { usleep(10_000) }
        if process.isRunning {
            kill(pid, SIGKILL)
            process.waitUntilExit()
        }
    }

    /// The last lines of its standard error.
    func logTail(lines: Int = 8) -> String {
        let text = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").suffix(lines).joined(separator: "\n")
    }

    /// `peerd` next to this executable (`/proc/self/exe`, else `CommandLine.arguments[0]`).
    static func locatePeerd() throws -> String {
        var buffer = [CChar](repeating: 0, count: 4096)
        let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        let executable =
            length > 0
            ? String(decoding: buffer[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            : URL(fileURLWithPath: CommandLine.arguments[0]).standardizedFileURL.path
        let peerd = ((executable as NSString).deletingLastPathComponent as NSString).appendingPathComponent("peerd")
        guard FileManager.default.isExecutableFile(atPath: peerd) else {
            throw SyncDaemonError(
                "no peerd binary at \(peerd): build it next to peerd-bench (`swift build -c release` builds both)")
        }
        return peerd
    }
}

/// A child's memory, threads, CPU time and disk writes, from `/proc/<pid>/status`, `stat` and `io`.
struct ChildStats {
    /// `VmRSS`, in MiB.
    var residentMiB: Double = .nan
    /// `VmHWM`: the peak resident set size since it started, in MiB.
    var peakMiB: Double = .nan
    /// `Threads`: how many threads it runs now.
    var threads: Int?
    /// User + system CPU time, in seconds.
    var cpuSeconds: Double = .nan
    /// `write_bytes`: bytes it sent to storage.
    var diskWrittenBytes: Int64?

    init(pid: Int32) {
        if let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) {
            for line in status.split(separator: "\n") {
                if line.hasPrefix("VmRSS:") { residentMiB = ChildStats.kibibytes(line) / 1024 }
                if line.hasPrefix("VmHWM:") { peakMiB = ChildStats.kibibytes(line) / 1024 }
                if line.hasPrefix("Threads:") { threads = Int(line.filter(\.isNumber)) }
            }
        }
        // Fields 14 and 15 (utime, stime) follow the parenthesised command name.
        if let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        {
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            if fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) {
                cpuSeconds = (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
            }
        }
        if let io = try? String(contentsOfFile: "/proc/\(pid)/io", encoding: .utf8) {
            for line in io.split(separator: "\n") where line.hasPrefix("write_bytes:") {
                diskWrittenBytes = Int64(line.dropFirst("write_bytes:".count).filter(\.isNumber))
            }
        }
    }

    private static func kibibytes(_ line: Substring) -> Double {
        Double(line.filter(\.isNumber)) ?? .nan
    }
}

/// A child process did not start, failed or printed something unexpected.
struct SyncDaemonError: Error, CustomStringConvertible {
    var description: String

    init(_ description: String) { self.description = description }
}
