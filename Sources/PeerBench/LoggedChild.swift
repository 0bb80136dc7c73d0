import ChildProcesses
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A child process (usually `peerd`) with its standard error in a log
/// file, observed through `/proc/<pid>`, stopped with SIGTERM.
final class LoggedChild {
    /// For messages, e.g. `A (source)`.
    let name: String
    let child: ChildProcess
    /// Where its standard error goes.
    let logPath: String

    /// Starts `executable arguments...`.
    init(name: String, _ executable: String, _ arguments: [String], logPath: String) throws {
        self.name = name
        self.logPath = logPath
        child = try ChildProcess(URL(fileURLWithPath: executable), arguments, name: name, stderrPath: logPath)
    }

    /// Runs `executable arguments...` to completion (killed after `seconds`) and returns its standard
    /// output; throws with its standard error when it fails.
    @discardableResult
    static func run(_ executable: String, _ arguments: [String], seconds: Double = 900) throws -> String {
        let result = try ChildProcess.run(
            URL(fileURLWithPath: executable), arguments, timeout: .milliseconds(Int(seconds * 1000)))
        guard result.status == 0 else {
            let command = ([URL(fileURLWithPath: executable).lastPathComponent] + arguments).joined(separator: " ")
            throw ChildProcessError("`\(command)` exited with \(result.status): \(result.stderr)")
        }
        return result.stdout
    }

    /// Runs `executable arguments...` to completion, sampling `/proc` every 20 ms (and calling `observe`):
    /// the wall seconds from start to exit, its last sample and its standard output.
    @discardableResult
    static func timed(
        name: String, _ executable: String, _ arguments: [String], logPath: String, observe: () -> Void = {}
    ) throws -> (seconds: Double, last: ChildStats, stdout: String) {
        let start = ContinuousClock.now
        let process = try LoggedChild(name: name, executable, arguments, logPath: logPath)
        var last = process.sample()
        while process.child.waitForExit(timeout: .milliseconds(20)) == nil {
            let sample = process.sample()
            if sample.peakMiB.isFinite { last = sample }
            observe()
        }
        let seconds = (ContinuousClock.now - start).seconds
        let result = try process.child.waitForResult()
        guard result.status == 0 else {
            throw ChildProcessError("\(name) exited with \(result.status): \(result.stdout) \(process.logTail())")
        }
        return (seconds, last, result.stdout)
    }

    var pid: Int32 { child.pid }

    /// Waits until a line starting with each of `prefixes` arrived on its standard output, in any order;
    /// returns the rest of each line, in the order of `prefixes`.
    func waitForLines(startingWith prefixes: [String], seconds: Double = 60) throws -> [String] {
        if let found = child.stdout.lines(startingWith: prefixes, timeout: .milliseconds(Int(seconds * 1000))) {
            return found
        }
        let missing = prefixes.filter { prefix in !child.stdout.lines.contains { $0.hasPrefix(prefix) } }
        throw ChildProcessError(
            "\(name) printed no \(missing.map { "`\($0)`" }.joined(separator: " or ")) line within \(seconds) s: "
                + logTail())
    }

    /// Throws when the process is gone (with its last log lines).
    func checkRunning() throws {
        if let ended = child.termination { throw ChildProcessError("\(name) ended (\(ended)): \(logTail())") }
    }

    /// What `/proc/<pid>` says now.
    func sample() -> ChildStats { ChildStats(pid: pid) }

    /// SIGTERM, then SIGKILL after 20 s.
    func stop() { _ = try? child.stop(with: SIGTERM, timeout: .seconds(20)) }

    /// The last lines of its log.
    func logTail(lines: Int = 8) -> String {
        let text = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").suffix(lines).joined(separator: "\n")
    }

    /// Bytes its log holds now: where a window of log lines to count later starts.
    var logOffset: UInt64 { UInt64(max(0, Workspace.fileSize(logPath))) }

    /// The complete lines its log gained since `offset`.
    func logLines(since offset: UInt64) -> [Substring] {
        guard let handle = FileHandle(forReadingAtPath: logPath) else { return [] }
        defer { try? handle.close() }
        guard (try? handle.seek(toOffset: offset)) != nil, let data = try? handle.readToEnd() else { return [] }
        var lines = String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
        lines.removeLast()  // an unfinished line, or empty after the final newline
        return lines
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

    private static func kibibytes(_ line: Substring) -> Double {
        Double(line.filter(\.isNumber)) ?? .nan
    }
}
