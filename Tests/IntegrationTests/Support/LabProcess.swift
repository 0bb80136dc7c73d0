import Foundation
import TestSupport

/// What a command run by the lab did: its exit status and its two outputs.
typealias LabResult = ProcessResult

struct LabFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Runs the lab's commands to completion; see `ProcessRun.runUnmasked`.
enum LabProcess {
    static func run(
        _ executable: String, _ arguments: [String], environment: [String: String] = [:]
    ) async throws -> LabResult {
        try await ProcessRun.runUnmasked(URL(fileURLWithPath: executable), arguments, environment: environment)
    }

    /// The same, blocking the calling thread (for `deinit`).
    static func runBlocking(
        _ executable: String, _ arguments: [String], environment: [String: String] = [:]
    ) throws -> LabResult {
        try ProcessRun.runUnmaskedBlocking(URL(fileURLWithPath: executable), arguments, environment: environment)
    }
}
