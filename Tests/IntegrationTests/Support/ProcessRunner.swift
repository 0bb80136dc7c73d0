import Foundation
import TestSupport

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

    /// Runs `executable` to completion; see `ProcessRun.run`.
    static func run(
        _ executable: URL, _ arguments: [String], environment: [String: String] = [:]
    ) throws -> ProcessResult {
        try ProcessRun.run(executable, arguments, environment: environment)
    }

    /// Runs `peerd` against a data directory.
    static func peerd(_ arguments: [String], data: URL) throws -> ProcessResult {
        try run("peerd", arguments + ["--data", data.path])
    }
}
