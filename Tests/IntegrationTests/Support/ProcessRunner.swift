import Foundation

/// What a finished process printed and how it exited.
struct ProcessResult: Sendable, CustomStringConvertible {
    var status: Int32
    var stdout: String
    var stderr: String

    var description: String { "exit \(status)\nstdout: \(stdout)\nstderr: \(stderr)" }
}

/// Locates and runs the package's executables as real processes.
enum Executables {
    /// The build products folder: `$PEERSYNC_BIN_DIR`, else beside the test binary.
    static var directory: URL {
        if let dir = ProcessInfo.processInfo.environment["PEERSYNC_BIN_DIR"] {
            return URL(fileURLWithPath: dir)
        }
        var url = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        // …/debug/PeerSyncPackageTests.xctest (a file on Linux, a bundle elsewhere)
        while !FileManager.default.fileExists(atPath: url.appendingPathComponent("peerd").path),
            url.pathComponents.count > 1
        {
            url.deleteLastPathComponent()
        }
        return url
    }

    static func url(_ name: String) -> URL { directory.appendingPathComponent(name) }

    /// Runs the package's executable `name` with `arguments` to completion.
    static func run(_ name: String, _ arguments: [String]) throws -> ProcessResult {
        try run(url(name), arguments)
    }

    /// Runs a system tool found on `PATH`, e.g. `sqlite3`.
    static func runSystem(_ name: String, _ arguments: [String]) throws -> ProcessResult {
        try run(URL(fileURLWithPath: "/usr/bin/env"), [name] + arguments)
    }

    /// Runs `executable` to completion with `environment` added to this
    /// process's, stdin empty, both outputs captured.
    static func run(
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

    /// Runs `peerd` against a data directory.
    static func peerd(_ arguments: [String], data: URL) throws -> ProcessResult {
        try run("peerd", arguments + ["--data", data.path])
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
