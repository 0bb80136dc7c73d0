import Foundation

/// A process that `netlab.sh spawn` started detached inside a lab host:
/// its pid (the process itself: `sh` and `nsenter` exec it), and its
/// output in files. It is observed through `/proc/PID`, never waited for:
/// it is no child of this process.
public final class LabProcess: Sendable {
    /// For messages and file names, e.g. `peerd run n1 (host 1)`.
    public let name: String
    /// The host it runs in.
    public let host: Int
    public let pid: Int32
    /// The name the kernel gives it once `sh` and `nsenter` have exec'd it (`comm`, at most 15 characters).
    public let program: String
    /// Just before `netlab.sh spawn` ran.
    public let startedAt: Date
    public let stdoutFile: String
    /// Its standard error, when it has a file of its own; else it is in `stdoutFile`.
    public let stderrFile: String?

    public init(
        name: String, host: Int, pid: Int32, program: String, startedAt: Date, stdoutFile: String,
        stderrFile: String?
    ) {
        self.name = name
        self.host = host
        self.pid = pid
        self.program = String(program.prefix(15))
        self.startedAt = startedAt
        self.stdoutFile = stdoutFile
        self.stderrFile = stderrFile
    }

    /// What it writes to standard output (and standard error, without a file of its own).
    public var stdout: LabLog { LabLog(path: stdoutFile) }

    /// Its log: standard error when it has a file of its own, else ``stdout``.
    public var log: LabLog { LabLog(path: stderrFile ?? stdoutFile) }

    /// Whether it runs: the process exists, is not a zombie (nothing may reap it for a while), and is `program`.
    public var isRunning: Bool { command.map { $0.hasPrefix(program) } ?? false }

    /// Whether the process exists and is not a zombie, whatever it runs: just after `netlab.sh spawn`
    /// it may still be the `sh` or `nsenter` that is about to exec `program`.
    public var isAlive: Bool { command != nil }

    /// The live process's name (`comm`), nil once it has ended.
    private var command: String? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let open = stat.firstIndex(of: "("), let close = stat.lastIndex(of: ")")
        else { return nil }
        let state = stat[stat.index(after: close)...].split(separator: " ").first ?? ""
        return state == "Z" || state == "X" ? nil : String(stat[stat.index(after: open)..<close])
    }

    /// Whether it lives in the network namespace `namespace`.
    public func isIn(namespace: String) -> Bool {
        var own = stat()
        var lab = stat()
        return stat("/proc/\(pid)/ns/net", &own) == 0 && stat("/run/netns/\(namespace)", &lab) == 0
            && own.st_ino == lab.st_ino && own.st_dev == lab.st_dev
    }

    /// Sends `signal`, after checking that the pid is still `program`'s.
    public func send(_ signal: Int32) throws {
        guard isRunning else { throw LabFailure("\(name) is not running; not sending signal \(signal)") }
        guard kill(pid, signal) == 0 else { throw LabFailure("kill(\(pid), \(signal)): errno \(errno)") }
    }
}
