import Foundation
import TestSupport

/// A finished child process: its exit status and everything it wrote,
/// stdout then stderr.
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
    /// thread with an empty signal mask (see `ChildProcess.run`).
    static func run(
        _ executable: String, _ arguments: [String], environment: [String: String] = [:]
    ) async throws -> CommandResult {
        // Everything netlab.sh leaves running writes to its own log, so the pipes end at exit.
        let result = try await ChildProcess.run(
            URL(fileURLWithPath: executable), arguments, environment: environment)
        return CommandResult(status: result.status, output: result.stdout + result.stderr)
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
