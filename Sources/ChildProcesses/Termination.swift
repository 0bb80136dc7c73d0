import Foundation

/// How a child process ended.
///
/// ```swift
/// let ended = try child.stop(with: SIGTERM)
/// #expect(ended.reason == .exit && ended.status == 0)   // or: ended.exitCode == 0
/// ```
public struct Termination: Sendable, Equatable, CustomStringConvertible {
    /// `.exit` when the process called `exit`, `.uncaughtSignal` when a signal ended it.
    public var reason: Process.TerminationReason
    /// The exit status, or the number of the signal that ended it.
    public var status: Int32

    public init(reason: Process.TerminationReason, status: Int32) {
        self.reason = reason
        self.status = status
    }

    /// What a shell reports: the exit status, or 128 + the signal.
    public var exitCode: Int32 { reason == .exit ? status : 128 + status }

    /// `exit 0`, `killed by signal 9`.
    public var description: String { reason == .exit ? "exit \(status)" : "killed by signal \(status)" }
}

/// A child process could not be started, did not end in time, or did something unexpected.
public struct ChildProcessError: Error, CustomStringConvertible {
    public var description: String

    public init(_ description: String) { self.description = description }
}
