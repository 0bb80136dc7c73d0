import Foundation
import Synchronization

/// A finished child process: its exit status and everything it wrote to
/// stdout and stderr, interleaved.
struct CommandResult: Sendable, CustomStringConvertible {
    var status: Int32
    var output: String

    var description: String { "exit \(status): \(output)" }
}

struct CommandFailed: Error, CustomStringConvertible {
    var command: [String]
    var result: CommandResult

    var description: String { "\(command.joined(separator: " ")) failed, \(result)" }
}

/// Runs child processes off Swift's cooperative pool.
enum Command {
    /// Runs `executable` with `arguments` to completion on a dedicated
    /// thread and returns what it did.
    ///
    /// The thread clears its signal mask first: a child inherits the mask of
    /// the thread that spawns it, the test runner's threads block most
    /// signals, and the daemons netlab.sh starts must obey SIGTERM.
    static func run(
        _ executable: String, _ arguments: [String], environment: [String: String] = [:]
    ) async throws -> CommandResult {
        try await withCheckedThrowingContinuation { continuation in
            let thread = Thread {
                var empty = sigset_t()
                sigemptyset(&empty)
                pthread_sigmask(SIG_SETMASK, &empty, nil)
                let process = Process()
                process.executableURL = URL(fileURLWithPath: executable)
                process.arguments = arguments
                process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
                let pipe = Pipe()
                process.standardOutput = pipe
                process.standardError = pipe
                process.standardInput = FileHandle.nullDevice
                do {
                    try process.run()
                    // Everything netlab.sh leaves running writes to its own log, so EOF comes at exit.
                    let data = pipe.fileHandleForReading.readDataToEndOfFile()
                    process.waitUntilExit()
                    continuation.resume(
                        returning: CommandResult(
                            status: process.terminationStatus, output: String(decoding: data, as: UTF8.self)))
                } catch {
                    continuation.resume(throwing: error)
                }
            }
            thread.start()
        }
    }

    /// Like ``run(_:_:environment:)``, throwing unless the exit status is 0.
    @discardableResult
    static func check(
        _ executable: String, _ arguments: [String], environment: [String: String] = [:]
    ) async throws -> CommandResult {
        let result = try await run(executable, arguments, environment: environment)
        guard result.status == 0 else { throw CommandFailed(command: [executable] + arguments, result: result) }
        return result
    }
}

/// Waiting for an observable condition with a deadline, never a fixed sleep.
struct TimedOut: Error, CustomStringConvertible {
    var what: String
    var timeout: Duration
    var details: String

    var description: String { "timed out after \(timeout) waiting for \(what)\n\(details)" }
}

/// Polls `condition` every 20 ms until it holds; throws ``TimedOut`` (with
/// `details()`, e.g. the probes' logs) when `timeout` passes first.
func eventually(
    _ what: String, timeout: Duration = .seconds(15), details: () -> String = { "" },
    _ condition: () async throws -> Bool
) async throws {
    let deadline = ContinuousClock.now.advanced(by: timeout)
    while try await !condition() {
        guard ContinuousClock.now < deadline else { throw TimedOut(what: what, timeout: timeout, details: details()) }
        try await Task.sleep(for: .milliseconds(20))
    }
}
