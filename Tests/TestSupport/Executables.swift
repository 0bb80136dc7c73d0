import ChildProcesses
import Foundation

/// Locates and runs the package's executables (`peerd`, `peerd-lab`, `peerd-demo`,
/// `peerd-bench`, `mdns-probe`) as real processes.
///
/// ```swift
/// let result = try Executables.run("peerd", ["status", "--json", "--data", data.path])
/// let probe = Executables.url("mdns-probe").path
/// ```
public enum Executables {
    /// The build products folder: `$PEERSYNC_BIN_DIR`, else the folder
    /// beside the test binary that holds `peerd`.
    public static var directory: URL {
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

    /// The package's executable `name`.
    public static func url(_ name: String) -> URL { directory.appendingPathComponent(name) }

    /// Runs the package's executable `name` with `arguments` to completion.
    public static func run(_ name: String, _ arguments: [String]) throws -> ProcessResult {
        try ChildProcess.run(url(name), arguments)
    }

    /// Runs a system tool found on `PATH`, e.g. `sqlite3`.
    public static func runSystem(_ name: String, _ arguments: [String]) throws -> ProcessResult {
        try ChildProcess.run(URL(fileURLWithPath: "/usr/bin/env"), [name] + arguments)
    }
}
