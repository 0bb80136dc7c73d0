import Foundation
import Synchronization

/// What a finished process printed and how it exited.
public struct ProcessResult: Sendable, CustomStringConvertible {
    public var status: Int32
    public var stdout: String
    public var stderr: String

    public init(status: Int32, stdout: String, stderr: String) {
        self.status = status
        self.stdout = stdout
        self.stderr = stderr
    }

    public var description: String { "exit \(status)\nstdout: \(stdout)\nstderr: \(stderr)" }
}

/// Runs a child process to completion, capturing both outputs. The one
/// place tests start short-lived processes.
public enum ProcessRun {
    /// Runs `executable` on the calling thread, with `environment` added to
    /// this process's and stdin empty.
    public static func run(
        _ executable: URL, _ arguments: [String], environment: [String: String] = [:]
    ) throws -> ProcessResult {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        // Read both pipes before waiting so a full pipe never blocks the child.
        let errorData = ReadAll(err.fileHandleForReading)
        let outputData = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return ProcessResult(
            status: process.terminationStatus, stdout: String(decoding: outputData, as: UTF8.self),
            stderr: String(decoding: errorData.wait(), as: UTF8.self))
    }

    /// The same on a thread of its own, off Swift's cooperative pool, with
    /// an empty signal mask: a child inherits the mask of the thread that
    /// spawns it, the test runner's threads block most signals, and daemons
    /// a lab script leaves running (avahi-daemon, `peerd run`) must obey SIGTERM.
    public static func runUnmasked(
        _ executable: URL, _ arguments: [String], environment: [String: String] = [:]
    ) async throws -> ProcessResult {
        try await withCheckedThrowingContinuation { continuation in
            startUnmasked(executable, arguments, environment) { continuation.resume(with: $0) }
        }
    }

    /// Like ``runUnmasked(_:_:environment:)``, blocking the calling thread (for `deinit`).
    public static func runUnmaskedBlocking(
        _ executable: URL, _ arguments: [String], environment: [String: String] = [:]
    ) throws -> ProcessResult {
        let outcome = Mutex<Result<ProcessResult, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        startUnmasked(executable, arguments, environment) { result in
            outcome.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        return try outcome.withLock { $0 }!.get()
    }

    private static func startUnmasked(
        _ executable: URL, _ arguments: [String], _ environment: [String: String],
        _ finished: @escaping @Sendable (Result<ProcessResult, any Error>) -> Void
    ) {
        let thread = Thread {
            var empty = sigset_t()
            sigemptyset(&empty)
            pthread_sigmask(SIG_SETMASK, &empty, nil)
            finished(Result { try run(executable, arguments, environment: environment) })
        }
        thread.start()
    }
}

/// Reads a pipe to its end on a background thread.
final class ReadAll: @unchecked Sendable {
    // `data` is written once by the reader thread before `done` is signalled,
    // and read only after waiting on `done`.
    private var data = Data()
    private let done = DispatchSemaphore(value: 0)

    init(_ handle: FileHandle) {
        Thread.detachNewThread { [self] in
            data = handle.readDataToEndOfFile()
            done.signal()
        }
    }

    func wait() -> Data {
        done.wait()
        return data
    }
}
