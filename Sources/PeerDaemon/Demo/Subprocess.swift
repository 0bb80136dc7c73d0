import Foundation
import Synchronization

/// Everything a child process writes to one pipe, read by a thread of its
/// own as it arrives so that the pipe never fills and blocks the child.
final class PipeReader: Sendable {
    private let data = Mutex(Data())
    private let ended = Mutex(false)

    init(_ handle: FileHandle) {
        Thread.detachNewThread { [self] in
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                data.withLock { $0.append(chunk) }
            }
            ended.withLock { $0 = true }
        }
    }

    /// What arrived so far, as UTF-8 text.
    var text: String { String(decoding: data.withLock { $0 }, as: UTF8.self) }

    /// Whether the writer closed the pipe (the child exited) and all of it was read.
    var isAtEnd: Bool { ended.withLock { $0 } }
}

/// What a finished child process printed and how it exited.
struct SubprocessResult: Sendable {
    var status: Int32
    var stdout: String
    var stderr: String
}

/// Child processes run to completion, and waiting on another process's
/// state with a deadline.
enum Subprocess {
    /// Runs `executable` with `arguments`, stdin empty, both outputs
    /// captured; `cleanup` (when given) stops it if the demo is interrupted.
    static func run(
        _ executable: String, _ arguments: [String], cleanup: DemoCleanup? = nil
    ) throws -> SubprocessResult {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let pid = process.processIdentifier
        if let cleanup, !cleanup.track(pid) { kill(pid, SIGKILL) }
        defer { cleanup?.untrack(pid) }
        let errors = PipeReader(err.fileHandleForReading)
        let output = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        _ = poll(timeout: .seconds(5)) { errors.isAtEnd }
        return SubprocessResult(
            status: process.terminationStatus, stdout: String(decoding: output, as: UTF8.self), stderr: errors.text)
    }

    /// Checks `condition` every `interval` until it holds (true) or
    /// `timeout` has passed (false). For another process's output or state,
    /// which no call here can await.
    static func poll(
        timeout: Duration, every interval: Duration = .milliseconds(20), _ condition: () throws -> Bool
    ) rethrows -> Bool {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while true {
            if try condition() { return true }
            if ContinuousClock.now >= deadline { return false }
            Thread.sleep(
                forTimeInterval: Double(interval.components.attoseconds) / 1e18 + Double(interval.components.seconds))
        }
    }

    /// Whether a process with this id still exists (running, or exited and
    /// not yet reaped).
    static func exists(_ pid: Int32) -> Bool {
        kill(pid, 0) == 0 || errno == EPERM
    }
}
