import Foundation
import TestSupport

/// The distribution's PostgreSQL, started for one test with `initdb` and
/// `postgres` in a directory of its own and reached over a Unix socket in
/// it (no TCP port, so servers of tests running at once never collide),
/// then stopped and removed. The server is a child of the test, not a
/// daemon `pg_ctl` leaves behind, so that a test that dies takes it along.
/// As root it runs as the `postgres` user (`initdb` refuses root), through
/// `setpriv`, which runs the program in the same process.
///
/// ```swift
/// let postgres = try PostgresServer.start()
/// let relay = try Daemon.start(data: temp.url("r"), extra: ["--relay", "--store", postgres.conninfo])
/// ```
final class PostgresServer {
    let directory: URL
    /// The libpq connection string of the test's database `site`.
    var conninfo: String { "host=\(directory.path) port=5432 user=peersync dbname=site" }

    private var server: ChildProcess?

    private init(directory: URL) {
        self.directory = directory
    }

    /// Makes a cluster with a database `site` owned by `peersync`, and starts it.
    static func start() throws -> PostgresServer {
        var template = Array("/tmp/peersync-pg-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw ChildProcessError("mkdtemp failed: errno \(errno)") }
        let server = PostgresServer(directory: URL(fileURLWithPath: String(cString: made)))
        if getuid() == 0 {
            try FileManager.default.setAttributes(
                [.ownerAccountName: "postgres", .posixPermissions: 0o700], ofItemAtPath: server.directory.path)
        }
        try server.run(
            "initdb", ["-D", server.dataPath, "-U", "peersync", "--auth=trust", "-E", "UTF8", "--no-sync"])
        try server.restart()
        try server.run("createdb", ["-h", server.directory.path, "-p", "5432", "-U", "peersync", "site"])
        return server
    }

    deinit {
        _ = try? server?.stop(with: SIGQUIT, timeout: .seconds(10))
        try? FileManager.default.removeItem(at: directory)
    }

    /// Stops the server (a fast shutdown: sessions are ended), as an operator's restart does.
    func stop() throws {
        _ = try server?.stop(with: SIGINT, timeout: .seconds(30))
        server = nil
    }

    /// Starts the server (again) and waits until it accepts connections.
    func restart() throws {
        server = try ChildProcess(
            URL(fileURLWithPath: Self.asServerUser[0]),
            Array(Self.asServerUser.dropFirst())
                + [
                    try Self.binary("postgres").path, "-D", dataPath, "-p", "5432", "-k", directory.path,
                    "-c", "listen_addresses=", "-c", "fsync=on",
                ],
            name: "postgres (\(directory.lastPathComponent))",
            stderrPath: directory.appendingPathComponent("server.log").path)
        let ready = try Poll.until(timeout: .seconds(60), every: .milliseconds(50)) {
            try run("pg_isready", ["-q", "-h", directory.path, "-p", "5432"], mayFail: true).status == 0
        }
        guard ready else { throw ChildProcessError("postgres in \(directory.path) did not start within 60 s") }
    }

    private var dataPath: String { directory.appendingPathComponent("data").path }

    /// `setpriv` to the `postgres` user when this is root, else nothing.
    private static var asServerUser: [String] {
        getuid() == 0
            ? ["/usr/bin/setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups"] : ["/usr/bin/env"]
    }

    @discardableResult
    private func run(_ tool: String, _ arguments: [String], mayFail: Bool = false) throws -> ProcessResult {
        let command = Self.asServerUser + [try Self.binary(tool).path] + arguments
        let result = try ChildProcess.run(
            URL(fileURLWithPath: command[0]), Array(command.dropFirst()), timeout: .seconds(60))
        guard mayFail || result.status == 0 else {
            throw ChildProcessError("\(tool) \(arguments.joined(separator: " ")) failed: \(result.stderr)")
        }
        return result
    }

    /// A program of the newest PostgreSQL installed (`/usr/lib/postgresql/N/bin`).
    private static func binary(_ tool: String) throws -> URL {
        let root = "/usr/lib/postgresql"
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []
        guard let newest = versions.compactMap(Int.init).max() else {
            throw ChildProcessError("no PostgreSQL under \(root): run scripts/setup.sh")
        }
        return URL(fileURLWithPath: "\(root)/\(newest)/bin/\(tool)")
    }
}
