import ChildProcesses
import Foundation

/// Where the demo plays: a temporary work directory (the current directory
/// while it runs, so that data directories are short relative paths), the
/// `peerd` executable beside this one, and what to clean up.
final class DemoStage {
    /// The temporary directory, removed at cleanup.
    let directory: String
    /// `peerd` in the folder of this executable (`/proc/self/exe`).
    let executable: String
    let cleanup = DemoCleanup()
    private var signalSources: [any DispatchSourceSignal] = []

    /// Creates the work directory, makes it the current directory, and
    /// cleans up on Ctrl-C or SIGTERM from now on.
    init() throws {
        let demo =
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
            ?? CommandLine.arguments[0]
        executable = URL(fileURLWithPath: demo).deletingLastPathComponent().appendingPathComponent("peerd").path
        guard FileManager.default.isExecutableFile(atPath: executable) else {
            throw DemoError("no peerd at \(executable): build it beside peerd-demo (`swift build` builds both)")
        }
        var template = Array(
            (NSTemporaryDirectory() as NSString).appendingPathComponent("peerd-demo.XXXXXX").utf8CString)
        // mkdtemp replaces the X's in place.
        guard template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) != nil else {
            throw DemoError("cannot create a temporary directory: \(String(cString: strerror(errno)))")
        }
        directory = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let previous = FileManager.default.currentDirectoryPath
        cleanup.atCleanup { [directory] in
            _ = FileManager.default.changeCurrentDirectoryPath(previous)
            // A child that was starting as the cleanup began may still add a
            // file while the tree is removed; then removing it again does.
            _ = Poll.until(timeout: .seconds(5), every: .milliseconds(50)) {
                try? FileManager.default.removeItem(atPath: directory)
                return !FileManager.default.fileExists(atPath: directory)
            }
        }
        signalSources = cleanup.exitOnSignals()
        guard FileManager.default.changeCurrentDirectoryPath(directory) else {
            cleanup.run()
            throw DemoError("cannot change into \(directory)")
        }
    }

    /// Runs `peerd WORDS` to completion and returns its stdout, trimmed;
    /// `shown` prints the command and what it printed. A failure throws.
    @discardableResult
    func peerd(_ words: String..., shown: Bool = true) throws -> String {
        try peerd(words, shown: shown)
    }

    @discardableResult
    func peerd(_ words: [String], shown: Bool = true) throws -> String {
        if shown { DemoConsole.command(words) }
        let result = try run(words)
        if shown {
            DemoConsole.output(result.stdout)
            DemoConsole.output(result.stderr)
        }
        guard result.status == 0 else {
            throw DemoError(
                "`peerd \(words.joined(separator: " "))` exited \(result.status): \(result.stderr)")
        }
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Runs `peerd WORDS` to completion, stopped by the cleanup should the demo be interrupted meanwhile.
    private func run(_ words: [String]) throws -> ProcessResult {
        let child = try ChildProcess(URL(fileURLWithPath: executable), words, name: "`peerd \(words[0])`")
        guard cleanup.track(child) else {
            _ = try? child.stop(with: SIGKILL)
            throw DemoError("interrupted")
        }
        defer { cleanup.untrack(child) }
        return try child.waitForResult()
    }

    /// Starts `peerd run --data NAME ARGUMENTS` in the background, shows the
    /// command and where it listens.
    func daemon(_ name: String, _ arguments: [String]) throws -> DemoDaemon {
        let words = ["run", "--data", name] + arguments
        DemoConsole.command(words, background: true)
        let daemon = try DemoDaemon(
            name, executable: executable, arguments: words,
            http: arguments.contains("--http") && !arguments.contains("off"),
            logPath: (directory as NSString).appendingPathComponent("\(name).log"), cleanup: cleanup)
        for line in daemon.banner { DemoConsole.line(line) }
        return daemon
    }

    /// What `peerd status --json --data NAME` says.
    func status(_ name: String) throws -> DemoStatus {
        let json = try peerd(["status", "--json", "--data", name], shown: false)
        do {
            return try JSONDecoder().decode(DemoStatus.self, from: Data(json.utf8))
        } catch {
            throw DemoError("cannot read `peerd status --json` of the \(name): \(error)")
        }
    }

    /// Polls `peerd status` of every replica in `names` until all report the
    /// same state hash and event count; returns that and how long it took.
    /// Throws when `timeout` passes first, with what each one said.
    func converge(_ names: [String], timeout: Duration = .seconds(20)) throws -> (DemoStatus, Duration) {
        let start = ContinuousClock.now
        var statuses: [DemoStatus] = []
        let agreed = try Poll.until(timeout: timeout, every: .milliseconds(20)) {
            statuses = try names.map(status)
            return Set(statuses).count == 1
        }
        guard agreed, let status = statuses.first else {
            let said = zip(names, statuses).map { "\($0): \($1)" }.joined(separator: "; ")
            throw DemoError("the replicas did not converge within \(timeout): \(said)")
        }
        return (status, ContinuousClock.now - start)
    }
}

/// The part of `peerd status --json` that tells whether replicas agree.
struct DemoStatus: Decodable, Hashable, CustomStringConvertible {
    var state_hash: String
    var event_count: Int

    var description: String { "\(event_count) events, state hash \(state_hash.prefix(16))" }
}
