import Foundation
import Synchronization
import TestSupport

/// One row of `peerd peers --json`.
struct LabPeer: Decodable, Sendable {
    var source: String
    var address: String?
    var replica_id: String?
    var role: String?
    var state: String
    var events_to_receive: UInt64
    var events_to_send: UInt64
}

/// A `peerd run` that `netlab.sh spawn` started inside a lab host: its pid
/// (the process itself: `sh` and `nsenter` exec it), its stdout and stderr
/// in files.
final class LabDaemon: Sendable {
    let node: LabNode
    let pid: Int32
    /// Just before `netlab.sh spawn` ran.
    let startedAt: Date
    let stdoutFile: String
    let stderrFile: String

    init(node: LabNode, pid: Int32, startedAt: Date, stdoutFile: String, stderrFile: String) {
        self.node = node
        self.pid = pid
        self.startedAt = startedAt
        self.stdoutFile = stdoutFile
        self.stderrFile = stderrFile
    }

    var name: String { "peerd run \(node)" }

    /// Whether the process runs: it exists, is not a zombie (nothing may reap it for a while), and is peerd.
    var isRunning: Bool { command.map { $0.hasPrefix("peerd") } ?? false }

    /// Whether the process exists and is not a zombie, whatever it runs: just after `netlab.sh spawn`
    /// it may still be the `sh` or `nsenter` that is about to exec `peerd`.
    var isAlive: Bool { command != nil }

    /// The live process's name (`comm`), `nil` once it has ended.
    private var command: String? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let open = stat.firstIndex(of: "("), let close = stat.lastIndex(of: ")")
        else { return nil }
        let state = stat[stat.index(after: close)...].split(separator: " ").first ?? ""
        return state == "Z" || state == "X" ? nil : String(stat[stat.index(after: open)..<close])
    }

    /// Whether the process lives in the lab's network namespace `namespace`.
    func isIn(namespace: String) -> Bool {
        var own = stat()
        var lab = stat()
        return stat("/proc/\(pid)/ns/net", &own) == 0 && stat("/run/netns/\(namespace)", &lab) == 0
            && own.st_ino == lab.st_ino && own.st_dev == lab.st_dev
    }

    private static func lines(_ path: String) -> [String] {
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        let complete = text.hasSuffix("\n") ? text : String(text[..<(text.lastIndex(of: "\n") ?? text.startIndex)])
        return complete.split(separator: "\n").map(String.init)
    }

    var stdoutLines: [String] { Self.lines(stdoutFile) }
    /// The log, one record a line.
    var logLines: [String] { Self.lines(stderrFile) }

    /// Log lines that contain every one of `parts`.
    func logLines(containing parts: String...) -> [String] { logLines(containingAll: parts) }

    func logLines(containingAll parts: [String]) -> [String] {
        logLines.filter { line in parts.allSatisfy { line.contains($0) } }
    }

    /// How many log lines contain every one of `parts`.
    func count(_ parts: String...) -> Int { logLines(containingAll: parts).count }

    /// The `ts=` of the `index`th log line that contains every one of `parts`.
    func time(of parts: String..., index: Int = 0) -> Date? {
        let matching = logLines(containingAll: parts)
        guard index < matching.count else { return nil }
        return Self.timestamp(matching[index])
    }

    /// `ts=2026-11-29T21:59:27.123Z` of a log line.
    static func timestamp(_ line: String) -> Date? {
        guard let field = line.split(separator: " ").first, field.hasPrefix("ts=") else { return nil }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.date(from: String(field.dropFirst(3)))
    }

    /// Sends `signal` to the process (after checking that the pid is still peerd's).
    func send(_ signal: Int32) throws {
        guard isRunning else { throw LabFailure("\(name) is not running; not sending signal \(signal)") }
        guard kill(pid, signal) == 0 else { throw LabFailure("kill(\(pid), \(signal)): errno \(errno)") }
    }
}
