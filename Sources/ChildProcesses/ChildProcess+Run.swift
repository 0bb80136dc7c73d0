import Foundation

/// What a finished child process printed and how it exited.
public struct ProcessResult: Sendable, CustomStringConvertible {
    /// The exit status, or the number of the signal that ended it.
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

extension ChildProcess {
    /// Runs `executable` to completion on the calling thread: stdin empty,
    /// both outputs captured, `environment` added to this process's.
    ///
    /// With `timeout`, a child still running at the deadline is killed and
    /// this throws. Once the child exited, its output is collected until
    /// both pipes end, or for at most 5 s when a daemon it started (one
    /// that daemonized) still holds them open.
    ///
    /// ```swift
    /// let result = try ChildProcess.run(URL(fileURLWithPath: "/usr/bin/sqlite3"), [database, query])
    /// guard result.status == 0 else { throw … }
    /// ```
    public static func run(
        _ executable: URL, _ arguments: [String], environment: [String: String] = [:], timeout: Duration? = nil
    ) throws -> ProcessResult {
        let command = ([executable.lastPathComponent] + arguments).joined(separator: " ")
        return try ChildProcess(executable, arguments, name: "`\(command)`", environment: environment)
            .waitForResult(timeout: timeout)
    }

    /// Waits for this child to exit by itself and returns what it printed;
    /// see ``run(_:_:environment:timeout:)``. For a child that someone else
    /// may have to stop meanwhile (the demo's cleanup on Ctrl-C).
    public func waitForResult(timeout: Duration? = nil) throws -> ProcessResult {
        let ended: Termination
        if let timeout {
            guard let exited = waitForExit(timeout: timeout) else {
                _ = try? stop(with: SIGKILL)
                throw ChildProcessError("\(name) did not exit within \(timeout); killed it")
            }
            ended = exited
        } else {
            ended = waitForExit()
        }
        stdout.waitForEnd(timeout: .seconds(5))
        stderr.waitForEnd(timeout: .seconds(5))
        return ProcessResult(status: ended.status, stdout: stdout.text, stderr: stderr.text)
    }

    /// The same on a thread of its own, so that the wait never holds a
    /// thread of Swift's cooperative pool.
    public static func run(
        _ executable: URL, _ arguments: [String], environment: [String: String] = [:], timeout: Duration? = nil
    ) async throws -> ProcessResult {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(
                    with: Result { try run(executable, arguments, environment: environment, timeout: timeout) })
            }
        }
    }
}
