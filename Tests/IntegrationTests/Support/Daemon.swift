import DaemonClient
import Foundation
import Synchronization

/// Everything a child process writes to one pipe, collected by a reader
/// thread as it arrives so that the pipe never fills and blocks the child.
final class PipeCapture: Sendable {
    private let buffer = Mutex(Data())

    init(_ handle: FileHandle) {
        Thread.detachNewThread { [self] in
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { return }
                buffer.withLock { $0.append(chunk) }
            }
        }
    }

    /// What arrived so far, as UTF-8 text.
    var text: String { String(decoding: buffer.withLock { $0 }, as: UTF8.self) }

    /// The complete lines that arrived so far.
    var lines: [String] {
        let text = text
        let complete = text.hasSuffix("\n") ? text : String(text[..<(text.lastIndex(of: "\n") ?? text.startIndex)])
        return complete.split(separator: "\n").map(String.init)
    }
}

/// The process ids of every child still running, killed when the test
/// process exits so that no child outlives a run that ended early.
private final class ChildRegistry: Sendable {
    static let shared = ChildRegistry()
    let pids = Mutex(Set<Int32>())

    private init() {
        atexit {
            for pid in ChildRegistry.shared.pids.withLock({ $0 }) { kill(pid, SIGKILL) }
        }
    }
}

/// A child process with captured stdout and stderr, killed with SIGKILL
/// when the last reference goes away (the end of a test, failed or not).
final class ChildProcess: @unchecked Sendable {
    // `process` is configured once in `init`; afterwards only its
    // thread-safe members (`isRunning`, `terminationStatus`,
    // `processIdentifier`) are used.
    private let process = Process()
    let name: String
    let stdout: PipeCapture
    let stderr: PipeCapture

    init(_ executable: URL, _ arguments: [String], name: String) throws {
        self.name = name
        process.executableURL = executable
        process.arguments = arguments
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try Self.runWithDefaultSignalMask(process)
        stdout = PipeCapture(out.fileHandleForReading)
        stderr = PipeCapture(err.fileHandleForReading)
        let pid = process.processIdentifier
        ChildRegistry.shared.pids.withLock { _ = $0.insert(pid) }
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        ChildRegistry.shared.pids.withLock { _ = $0.remove(process.processIdentifier) }
    }

    /// Starts `process` from a fresh thread whose signal mask is empty.
    ///
    /// A child inherits the signal mask of the thread that spawns it, and
    /// the test runner's threads block most signals: a tool that does not
    /// unblock them itself (tcpdump) would never see SIGINT or SIGTERM.
    private static func runWithDefaultSignalMask(_ process: Process) throws {
        let outcome = Mutex<(any Error)??>(nil)
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            var empty = sigset_t()
            sigemptyset(&empty)
            pthread_sigmask(SIG_SETMASK, &empty, nil)
            let result: (any Error)?
            do {
                try process.run()
                result = nil
            } catch {
                result = error
            }
            outcome.withLock { $0 = .some(result) }
            done.signal()
        }
        thread.start()
        done.wait()
        if let error = outcome.withLock({ $0 }) ?? nil { throw error }
    }

    var pid: Int32 { process.processIdentifier }
    var isRunning: Bool { process.isRunning }

    /// Sends `signal` and waits for the process to end; returns how it ended.
    /// Throws when it still runs at the deadline (and then kills it).
    @discardableResult
    func stop(with signal: Int32, timeout: Duration = .seconds(30)) throws -> (
        reason: Process.TerminationReason, status: Int32
    ) {
        if process.isRunning { kill(process.processIdentifier, signal) }
        guard Poll.until(timeout: timeout, { !process.isRunning }) else {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            throw ChildProcessError("\(name) still ran \(timeout) after signal \(signal); killed it\n\(stderr.text)")
        }
        process.waitUntilExit()
        ChildRegistry.shared.pids.withLock { _ = $0.remove(process.processIdentifier) }
        return (process.terminationReason, process.terminationStatus)
    }
}

struct ChildProcessError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// `peerd run` as a real child process on 127.0.0.1 with a port the kernel
/// picked, its stderr log captured.
///
/// ```swift
/// let a = try Daemon.start(data: temp.url("a"))
/// let b = try Daemon.start(data: temp.url("b"), peers: [a.address])
/// #expect(b.waitForLog("peer identified"))
/// try b.stop()   // SIGTERM; b.kill() is SIGKILL
/// ```
final class Daemon: Sendable {
    let name: String
    let data: URL
    let port: UInt16
    /// The daemon's HTTP API (nil with `--http off`).
    let api: DaemonEndpoint?
    let child: ChildProcess

    private init(name: String, data: URL, port: UInt16, api: DaemonEndpoint?, child: ChildProcess) {
        self.name = name
        self.data = data
        self.port = port
        self.api = api
        self.child = child
    }

    /// Starts `peerd run` on `data` and waits until it prints its port.
    /// mDNS is off: these tests are about static peers on loopback, and a
    /// host's own avahi-daemon must not make them find each other.
    ///
    /// With `descriptorLimit`, it runs under `ulimit -n` of that many
    /// descriptors (through `/bin/sh`, which `exec`s it: the same process).
    static func start(
        _ name: String? = nil, data: URL, peers: [String] = [], logLevel: String = "debug", http: Bool = true,
        extra: [String] = [], descriptorLimit: Int? = nil, timeout: Duration = .seconds(30)
    ) throws -> Daemon {
        let name = name ?? data.lastPathComponent
        var arguments = ["run", "--data", data.path, "--listen", "127.0.0.1:0", "--log-level", logLevel, "--no-mdns"]
        arguments += ["--http", http ? "127.0.0.1:0" : "off"] + extra
        for peer in peers { arguments += ["--peer", peer] }
        let peerd = Executables.url("peerd")
        let child =
            try descriptorLimit.map { limit in
                try ChildProcess(
                    URL(fileURLWithPath: "/bin/sh"),
                    ["-c", "ulimit -n \(limit) && exec \"$0\" \"$@\"", peerd.path] + arguments,
                    name: "peerd run (\(name), ulimit -n \(limit))")
            } ?? ChildProcess(peerd, arguments, name: "peerd run (\(name))")
        var port: UInt16?
        var httpPort: UInt16?
        let ready = Poll.until(timeout: timeout) {
            port = portPrinted(child, after: "listening on 127.0.0.1:")
            httpPort = portPrinted(child, after: "http on 127.0.0.1:")
            return (port != nil && (httpPort != nil || !http)) || !child.isRunning
        }
        guard ready, let port, httpPort != nil || !http else {
            throw ChildProcessError(
                "peerd run (\(name)) printed no port within \(timeout) (running: \(child.isRunning))\n"
                    + "stdout: \(child.stdout.text)\nstderr: \(child.stderr.text)")
        }
        let api = httpPort.map { DaemonEndpoint(host: "127.0.0.1", port: $0) }
        return Daemon(name: name, data: data, port: port, api: api, child: child)
    }

    private static func portPrinted(_ child: ChildProcess, after prefix: String) -> UInt16? {
        child.stdout.lines.lazy.compactMap { line in
            line.hasPrefix(prefix) ? UInt16(line.dropFirst(prefix.count)) : nil
        }.first
    }

    /// `127.0.0.1:PORT`, for another daemon's `--peer`.
    var address: String { "127.0.0.1:\(port)" }
    var isRunning: Bool { child.isRunning }
    var stderr: String { child.stderr.text }
    var logLines: [String] { child.stderr.lines }

    /// Log lines that contain every one of `parts`.
    func logLines(containing parts: String...) -> [String] {
        logLines.filter { line in parts.allSatisfy { line.contains($0) } }
    }

    /// Waits until a log line contains every one of `parts`.
    func waitForLog(_ parts: String..., timeout: Duration = .seconds(30)) -> Bool {
        Poll.until(timeout: timeout) {
            child.stderr.lines.contains { line in parts.allSatisfy { line.contains($0) } }
        }
    }

    /// SIGTERM, then waits; returns the exit status (a clean stop is 0).
    @discardableResult
    func stop(timeout: Duration = .seconds(30)) throws -> Int32 {
        let ended = try child.stop(with: SIGTERM, timeout: timeout)
        return ended.reason == .exit ? ended.status : 128 + ended.status
    }

    /// SIGKILL, then waits; true when the signal is what ended the process.
    @discardableResult
    func kill() throws -> Bool {
        try child.stop(with: SIGKILL).reason == .uncaughtSignal
    }
}
