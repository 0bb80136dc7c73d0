import Foundation
import Synchronization
import TestSupport

/// What a command run by the lab did: its exit status and its two outputs.
typealias LabResult = ProcessResult

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
        // Whatever netlab.sh leaves running writes to files of its own, so both pipes end at exit.
        try Executables.run(URL(fileURLWithPath: executable), arguments, environment: environment)
    }
}
