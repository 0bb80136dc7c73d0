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
    private let process: Process
    private let cleanup: DemoCleanup

    /// Starts `peerd ARGUMENTS` and waits (up to 30 s) until it printed
    /// where it listens (and its HTTP address, when `http` is true).
    init(
        _ name: String, executable: String, arguments: [String], http: Bool, logPath: String, cleanup: DemoCleanup
    ) throws {
        self.name = name
        self.logPath = logPath
        self.cleanup = cleanup
        guard FileManager.default.createFile(atPath: logPath, contents: nil),
            let log = FileHandle(forWritingAtPath: logPath)
        else { throw CommandError("demo: cannot create \(logPath)") }
        process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardError = log
        process.standardInput = FileHandle.nullDevice
        try process.run()
        try? log.close()
        let pid = process.processIdentifier
        guard cleanup.track(pid) else {
            kill(pid, SIGKILL)
            throw CommandError("demo: interrupted")
        }
        let stdout = PipeReader(out.fileHandleForReading)
        let wanted = http ? ["listening on ", "http on "] : ["listening on "]
        var lines: [String] = []
        let ready = Subprocess.poll(timeout: .seconds(30)) { [process] in
            lines = stdout.text.split(separator: "\n").map(String.init)
            let printedAll = wanted.allSatisfy { prefix in lines.contains { $0.hasPrefix(prefix) } }
            return printedAll || !process.isRunning
        }
        guard ready, process.isRunning, let listening = lines.first(where: { $0.hasPrefix("listening on ") }) else {
            let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
            throw CommandError("demo: peerd run for the \(name) did not start\n\(stdout.text)\(log)")
        }
        banner = lines
        address = String(listening.dropFirst("listening on ".count))
    }

    /// The port it listens on.
    var port: String { String(address.split(separator: ":").last ?? "") }

    /// SIGTERM, then waits (up to 10 s) for it to exit; returns its exit
    /// status (0 for a clean stop).
    @discardableResult
    func stop() -> Int32 {
        if process.isRunning { kill(process.processIdentifier, SIGTERM) }
        if !Subprocess.poll(timeout: .seconds(10), { !process.isRunning }) { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        cleanup.untrack(process.processIdentifier)
        return process.terminationReason == .exit ? process.terminationStatus : 128 + process.terminationStatus
    }
}
