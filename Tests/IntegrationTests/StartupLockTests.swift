import DaemonClient
import Foundation
import TestSupport
import Testing

/// `peerd run` starting while another process holds a lock on `replica.db`
/// (`peerd status` checkpointing as it closes, an `sqlite3` shell): it waits
/// for the lock like every other open, then starts.
@Suite("peerd run: a start waits out a lock on the database")
struct StartupLockTests {
    let temp: TemporaryDirectory
    init() throws { temp = try TemporaryDirectory() }

    /// Whether process `pid` has `path` open.
    func hasOpen(_ pid: Int32, _ path: String) -> Bool {
        let fds = "/proc/\(pid)/fd"
        let target = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: fds)) ?? []
        return entries.contains {
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "\(fds)/\($0)")) == target
        }
    }

    @Test("a daemon started while an exclusive lock is held starts once it is released")
    func startWaitsForLock() throws {
        try temp.peerdOK(["init"], "a")
        let database = temp.path("a/replica.db")
        let release = temp.path("release")
        try #require(mkfifo(release, 0o600) == 0)
        // sqlite3 holds an exclusive lock (no reader gets in, WAL or not) until something writes to the FIFO.
        let holder = try ChildProcess(
            URL(fileURLWithPath: "/usr/bin/sqlite3"),
            [
                database, "PRAGMA locking_mode = EXCLUSIVE;", "BEGIN EXCLUSIVE;", "SELECT count(*) FROM meta;",
                ".shell touch \(temp.path("held")) && cat \(release)",
            ], name: "sqlite3 (lock holder)")
        try #require(
            Poll.until(timeout: .seconds(10)) { FileManager.default.fileExists(atPath: temp.path("held")) },
            "sqlite3 did not take the lock: \(holder.stderr.text)")
        let peerd = try ChildProcess(
            Executables.url("peerd"),
            ["run", "--data", temp.path("a"), "--listen", "127.0.0.1:0", "--no-mdns", "--http", "127.0.0.1:0"],
            name: "peerd run (a)")
        defer { _ = try? peerd.stop(with: SIGKILL) }
        // Once peerd has the file open it reads it, and waits on the lock.
        try #require(
            Poll.until(timeout: .seconds(10)) { !peerd.isRunning || hasOpen(peerd.pid, database) },
            "peerd run never opened \(database)")
        #expect(peerd.isRunning, "peerd run gave up on the lock: \(peerd.stderr.text)")
        try #require(FileHandle(forWritingAtPath: release)).write(Data("go\n".utf8))
        #expect(
            holder.waitForExit(timeout: .seconds(10)) == Termination(reason: .exit, status: 0), "\(holder.stderr.text)")

        let http = peerd.stdout.lines(
            startingWith: ["listening on 127.0.0.1:", "http on 127.0.0.1:"], timeout: .seconds(30))
        let port = try #require(http?.last.flatMap { UInt16($0) }, "peerd run did not start: \(peerd.stderr.text)")
        #expect(try DaemonEndpoint(host: "127.0.0.1", port: port).request("GET", "/health").status == 200)
        #expect(try peerd.stop(with: SIGTERM) == Termination(reason: .exit, status: 0))
    }
}
