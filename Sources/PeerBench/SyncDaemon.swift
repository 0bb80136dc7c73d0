import ChildProcesses
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// One `peerd` child process: started with its standard error in a log
/// file, observed through `/proc/<pid>`, stopped with SIGTERM.
final class SyncDaemon {
    /// For messages, e.g. `A (source)`.
    let name: String
    /// The child itself: its standard output is read as it arrives.
    let child: ChildProcess
    /// Where its standard error goes.
    let logPath: String

    /// Starts `peerd arguments...`.
    init(name: String, peerd: String, arguments: [String], logPath: String) throws {
        self.name = name
        self.logPath = logPath
        child = try ChildProcess(URL(fileURLWithPath: peerd), arguments, name: name, stderrPath: logPath)
    }

    /// Runs `peerd arguments...` to completion (killed after `seconds`, when given) and returns its
    /// standard output; throws with the end of its log when it fails.
    @discardableResult
    static func runToCompletion(peerd: String, arguments: [String], logPath: String, seconds: Double? = nil) throws
        -> String
    {
        let command = "`peerd \(arguments.joined(separator: " "))`"
        let daemon = try SyncDaemon(name: command, peerd: peerd, arguments: arguments, logPath: logPath)
        let result = try daemon.child.waitForResult(timeout: seconds.map { .milliseconds(Int($0 * 1000)) })
        guard result.status == 0 else {
            throw SyncDaemonError("\(command) exited with \(result.status): \(daemon.logTail())")
        }
        return result.stdout
    }

    var pid: Int32 { child.pid }

    /// Reads standard output until a line starting with `prefix` arrives; returns the rest of that line.
    func waitForLine(startingWith prefix: String, seconds: Double) throws -> String {
        try waitForLines(startingWith: [prefix], seconds: seconds)[0]
    }

    /// Reads standard output until a line starting with each of `prefixes`
    /// arrived, in any order; returns the rest of each line, in the order of `prefixes`.
    func waitForLines(startingWith prefixes: [String], seconds: Double) throws -> [String] {
        if let found = child.stdout.lines(startingWith: prefixes, timeout: .milliseconds(Int(seconds * 1000))) {
            return found
        }
        guard !child.stdout.isAtEnd else { throw SyncDaemonError("\(name) closed its output: \(logTail())") }
        let missing = prefixes.filter { prefix in !child.stdout.lines.contains { $0.hasPrefix(prefix) } }
        throw SyncDaemonError(
            "\(name) printed no \(missing.map { "`\($0)`" }.joined(separator: " or ")) line within \(seconds) s: "
                + logTail())
    }

    /// Throws when the process is gone (with its last log lines).
    func checkRunning() throws {
        if let ended = child.termination { throw SyncDaemonError("\(name) ended (\(ended)): \(logTail())") }
    }

    /// What `/proc/<pid>` says now.
    func sample() -> ChildStats { ChildStats(pid: pid) }

    /// SIGTERM, then waits up to `seconds` for the exit (SIGKILL after that).
    func stop(seconds: Double = 20) {
        _ = try? child.stop(with: SIGTERM, timeout: .milliseconds(Int(seconds * 1000)))
    }

    /// The last lines of its standard error.
    func logTail(lines: Int = 8) -> String {
        let text = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").suffix(lines).joined(separator: "\n")
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
