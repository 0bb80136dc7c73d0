import Foundation

/// A child process with its standard output captured as it arrives (and
/// its standard error captured too, or written to a log file), standard
/// input empty, started with an empty signal mask.
///
/// It is killed with SIGKILL when the last reference goes away (the end of
/// a test, failed or not) and when this process exits, so no child
/// outlives the run that started it. Neither pipe can block the child:
/// each has a reader thread of its own.
///
/// ```swift
/// let daemon = try ChildProcess(peerd, ["run", "--data", "a"], name: "peerd run (a)")
/// guard let address = daemon.stdout.firstLine(startingWith: "listening on ", timeout: .seconds(30)) else { … }
/// let ended = try daemon.stop(with: SIGTERM, timeout: .seconds(10))   // throws if it outlives the deadline
/// ```
///
/// `@unchecked Sendable`: `process` is set up and launched once (on the launcher
/// thread) and then only signalled and read after `exited`; the captures guard themselves.
public final class ChildProcess: @unchecked Sendable {
    // `process` is configured once in `init`; afterwards only its
    // thread-safe members (`isRunning`, `terminationStatus`,
    // `terminationReason`, `processIdentifier`) are used. Never its
    // `waitUntilExit`, which makes a run loop (descriptors) on the waiting
    // thread: `exited` says when it ended.
    private let process = Process()
    /// Left once, by the termination handler, when the process has ended.
    private let exited = DispatchGroup()
    /// For messages, e.g. `peerd run (a)`.
    public let name: String
    /// Its standard output.
    public let stdout: OutputCapture
    /// Its standard error; empty (and at its end) when it goes to a log file.
    public let stderr: OutputCapture

    /// Starts `executable` with `arguments` and `environment` added to this
    /// process's; with `stderrPath`, standard error goes to that file
    /// (created or truncated) instead of a pipe.
    public init(
        _ executable: URL, _ arguments: [String], name: String, environment: [String: String] = [:],
        stderrPath: String? = nil
    ) throws {
        self.name = name
        process.executableURL = executable
        process.arguments = arguments
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        let out = Pipe()
        process.standardOutput = out
        process.standardInput = FileHandle.nullDevice
        var errorPipe: Pipe?
        var errorLog: FileHandle?
        if let stderrPath {
            guard FileManager.default.createFile(atPath: stderrPath, contents: nil),
                let log = FileHandle(forWritingAtPath: stderrPath)
            else { throw ChildProcessError("\(name): cannot create \(stderrPath)") }
            process.standardError = log
            errorLog = log
        } else {
            let pipe = Pipe()
            process.standardError = pipe
            errorPipe = pipe
        }
        exited.enter()
        process.terminationHandler = { [exited] _ in exited.leave() }
        do {
            try ChildLauncher.shared.launch(process)
        } catch {
            exited.leave()  // no handler will: a group must not go while entered
            try? errorLog?.close()
            throw error
        }
        try? errorLog?.close()
        ChildRegistry.shared.insert(process.processIdentifier)
        stdout = OutputCapture(out.fileHandleForReading)
        stderr = errorPipe.map { OutputCapture($0.fileHandleForReading) } ?? OutputCapture()
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        exited.wait()
        ChildRegistry.shared.remove(process.processIdentifier)
    }

    /// Its process id.
    public var pid: Int32 { process.processIdentifier }

    /// Whether it has not ended yet.
    public var isRunning: Bool { process.isRunning }

    /// How it ended; nil while it runs.
    public var termination: Termination? {
        process.isRunning ? nil : Termination(reason: process.terminationReason, status: process.terminationStatus)
    }

    /// Waits up to `timeout` for it to end by itself; returns how it ended,
    /// nil when it still runs.
    @discardableResult
    public func waitForExit(timeout: Duration) -> Termination? {
        guard exited.wait(timeout: .now() + timeout.timeInterval) == .success else { return nil }
        ChildRegistry.shared.remove(process.processIdentifier)
        drainOutput()
        return termination
    }

    /// Waits for it to end by itself, however long that takes.
    @discardableResult
    public func waitForExit() -> Termination {
        exited.wait()
        ChildRegistry.shared.remove(process.processIdentifier)
        drainOutput()
        return Termination(reason: process.terminationReason, status: process.terminationStatus)
    }

    /// Once it ended: what it wrote last may still be in the pipes, read by
    /// the capture threads a moment later; waits for both to reach their end
    /// (briefly: a grandchild may hold them open).
    private func drainOutput() {
        _ = stdout.waitForEnd(timeout: .seconds(1))
        _ = stderr.waitForEnd(timeout: .seconds(1))
    }

    /// Sends `signal` (unless it already ended) and waits for it to end;
    /// returns how it ended. When it still runs at the deadline it is
    /// killed with SIGKILL and this throws, with what it wrote to stderr.
    @discardableResult
    public func stop(with signal: Int32 = SIGTERM, timeout: Duration = .seconds(30)) throws -> Termination {
        if process.isRunning { kill(process.processIdentifier, signal) }
        if let ended = waitForExit(timeout: timeout) { return ended }
        kill(process.processIdentifier, SIGKILL)
        waitForExit()
        throw ChildProcessError("\(name) still ran \(timeout) after signal \(signal); killed it\n\(stderr.text)")
    }
}
