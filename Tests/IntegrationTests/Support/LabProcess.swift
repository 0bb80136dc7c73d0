import Foundation
import TestSupport

/// What a command run by the lab did: its exit status and its two outputs.
typealias LabResult = ProcessResult

struct LabFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Runs the lab's commands to completion; see `ChildProcess.run`.
enum LabProcess {
    static func run(
        _ executable: String, _ arguments: [String], environment: [String: String] = [:]
    ) async throws -> LabResult {
        try await ChildProcess.run(URL(fileURLWithPath: executable), arguments, environment: environment)
    }

    /// The same, blocking the calling thread (for `deinit`).
    static func runBlocking(
        _ executable: String, _ arguments: [String], environment: [String: String] = [:]
    ) throws -> LabResult {
        try ChildProcess.run(URL(fileURLWithPath: executable), arguments, environment: environment)
    }
}
