import Foundation
import Synchronization
import TestSupport

/// What a command run by the lab did: its exit status and its two outputs.
struct LabResult: Sendable, CustomStringConvertible {
    var status: Int32
    var stdout: String
    var stderr: String

    var description: String { "exit \(status)\nstdout: \(stdout)\nstderr: \(stderr)" }
}

struct LabFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Runs child processes to completion on threads of their own, off Swift's
/// cooperative pool, each with an empty signal mask: a child inherits the
/// mask of the thread that spawns it, the test runner's threads block most
/// signals, and what `netlab.sh` leaves running (avahi-daemon, `peerd run`)
/// must obey SIGTERM.
enum LabProcess {
    static func run(
        _ executable: String, _ arguments: [String], environment: [String: String] = [:]
    ) async throws -> LabResult {
        try await withCheckedThrowingContinuation { continuation in
            start(executable, arguments, environment) { continuation.resume(with: $0) }
        }
    }

    /// The same, blocking the calling thread (for `deinit`).
    static func runBlocking(
        _ executable: String, _ arguments: [String], environment: [String: String] = [:]
    ) throws -> LabResult {
        let outcome = Mutex<Result<LabResult, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        start(executable, arguments, environment) { result in
            outcome.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        return try outcome.withLock { $0 }!.get()
    }

    private static func start(
        _ executable: String, _ arguments: [String], _ environment: [String: String],
        _ finished: @escaping @Sendable (Result<LabResult, any Error>) -> Void
    ) {
        let thread = Thread {
            var empty = sigset_t()
            sigemptyset(&empty)
            pthread_sigmask(SIG_SETMASK, &empty, nil)
            finished(Result { try collect(executable, arguments, environment) })
        }
        thread.start()
    }

    private static func collect(
        _ executable: String, _ arguments: [String], _ environment: [String: String]
    ) throws -> LabResult {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        // Whatever netlab.sh leaves running writes to files of its own, so both pipes end at exit.
        let errorData = ReadAll(err.fileHandleForReading)
        let outputData = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return LabResult(
            status: process.terminationStatus, stdout: String(decoding: outputData, as: UTF8.self),
            stderr: String(decoding: errorData.wait(), as: UTF8.self))
    }
}
