import ChildProcesses
import Foundation

/// One `peerd run` of the demo: a child process in the background whose
/// stdout is read as it arrives and whose log goes to `NAME.log` in the work
/// directory.
final class DemoDaemon {
    let name: String
    /// What it printed on stdout once it was ready: `listening on HOST:PORT`
    /// and, with the HTTP API, `http on HOST:PORT`.
    let banner: [String]
    /// `HOST:PORT` from `listening on`, for another daemon's `--peer`.
    let address: String
    let logPath: String
    private let child: ChildProcess
    private let cleanup: DemoCleanup

    /// Starts `peerd ARGUMENTS` and waits (up to 30 s) until it printed
    /// where it listens (and its HTTP address, when `http` is true).
    init(
        _ name: String, executable: String, arguments: [String], http: Bool, logPath: String, cleanup: DemoCleanup
    ) throws {
        self.name = name
        self.logPath = logPath
        self.cleanup = cleanup
        child = try ChildProcess(
            URL(fileURLWithPath: executable), arguments, name: "peerd run for the \(name)", stderrPath: logPath)
        guard cleanup.track(child) else {
            _ = try? child.stop(with: SIGKILL)
            throw DemoError("interrupted")
        }
        let wanted = http ? ["listening on ", "http on "] : ["listening on "]
        guard let printed = child.stdout.lines(startingWith: wanted, timeout: .seconds(30)), child.isRunning else {
            let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
            throw DemoError("peerd run for the \(name) did not start\n\(child.stdout.text)\(log)")
        }
        banner = child.stdout.lines
        address = printed[0]
    }

    /// The port it listens on.
    var port: String { String(address.split(separator: ":").last ?? "") }

    /// SIGTERM, then waits (up to 10 s, then SIGKILL) for it to exit;
    /// returns its exit status (0 for a clean stop).
    @discardableResult
    func stop() -> Int32 {
        defer { cleanup.untrack(child) }
        return (try? child.stop(with: SIGTERM, timeout: .seconds(10)))?.exitCode ?? 128 + SIGKILL
    }
}
