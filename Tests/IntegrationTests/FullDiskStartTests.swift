import Foundation
import TestSupport
import Testing

/// `peerd run` on a data directory whose disk is full: one clear line and
/// exit 1, nothing half-written, and the replica intact once there is room.
@Suite(
    "peerd run on a full disk", .serialized,
    .disabled(if: SmallDisk.unavailableReason != nil, Comment(rawValue: SmallDisk.unavailableReason ?? "")))
struct FullDiskStartTests {
    let temp: TemporaryDirectory
    init() throws { temp = try TemporaryDirectory() }

    /// `peerd run` on `data` until it exits by itself (at most 30 s); its result.
    private func runUntilItExits(_ data: String) throws -> (status: Int32, stdout: String, stderr: String) {
        let arguments = ["run", "--data", data, "--no-mdns", "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0"]
        let child = try ChildProcess(Executables.url("peerd"), arguments, name: "peerd run on a full disk")
        let exited = child.waitForExit(timeout: .seconds(30)) != nil
        let ended = try child.stop(with: SIGKILL)
        try #require(exited, "peerd run kept running on a full disk\n\(child.stderr.text)")
        child.stdout.waitForEnd(timeout: .seconds(5))
        child.stderr.waitForEnd(timeout: .seconds(5))
        return (ended.status, child.stdout.text, child.stderr.text)
    }

    /// The replica's `status --json`, to compare before and after.
    private func status(_ data: String) throws -> String {
        let result = try Executables.run("peerd", ["status", "--json", "--data", data])
        try #require(result.status == 0, "\(result)")
        return result.stdout
    }

    /// Requires the one clear line, exit 1, and no half-written daemon file.
    private func expectClearFailure(
        _ result: (status: Int32, stdout: String, stderr: String), _ expectedLine: String, in data: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(result.status == 1, "\(result)", sourceLocation: sourceLocation)
        let expected = "peerd: error: \(expectedLine)\n"
        #expect(result.stderr.hasSuffix(expected), "\(result.stderr)", sourceLocation: sourceLocation)
        #expect(!result.stderr.contains("NSCocoaErrorDomain"), sourceLocation: sourceLocation)
        #expect(!result.stderr.contains("SQLite error"), sourceLocation: sourceLocation)
        #expect(!result.stdout.contains("listening on"), "not ready: \(result.stdout)", sourceLocation: sourceLocation)
        for leftover in ["daemon.json", "daemon.json.partial"] {
            #expect(
                !FileManager.default.fileExists(atPath: "\(data)/\(leftover)"), "\(leftover) left behind",
                sourceLocation: sourceLocation)
        }
    }

    @Test("a replica made with peerd init on a disk that is then filled: the start stops at its lock file")
    func freshReplicaOnAFullDisk() throws {
        let disk = try SmallDisk(in: temp)
        let data = disk.path + "/a"
        try temp.peerdOK(["init"], "disk/a")
        try temp.peerdOK(["item", "create", "Bolts", "5"], "disk/a")
        let before = try status(data)
        try disk.fill()

        expectClearFailure(
            try runUntilItExits(data),
            "cannot write \(data)/peerd.lock: the disk is full (No space left on device); free some space and start again",
            in: data)

        try disk.free()
        #expect(try status(data) == before, "nothing was lost")
        #expect(try Executables.run("peerd", ["check", "--data", data]).status == 0)
        let daemon = try Daemon.start(data: URL(fileURLWithPath: data))
        #expect(try daemon.stop() == 0, "starts again once there is room: \(daemon.stderr)")
    }

    @Test("a replica closed cleanly after a killed daemon: the start stops opening replica.db")
    func restartWithoutWALFilesOnAFullDisk() throws {
        let disk = try SmallDisk(in: temp)
        let data = disk.path + "/a"
        try temp.peerdOK(["init"], "disk/a")
        try temp.peerdOK(["item", "create", "Bolts", "5"], "disk/a")
        let crashed = try Daemon.start(data: URL(fileURLWithPath: data))
        #expect(try crashed.kill())
        try FileManager.default.removeItem(atPath: data + "/daemon.json")
        // The last connection to close (this status) removes SQLite's -wal and -shm files.
        let before = try status(data)
        #expect(!FileManager.default.fileExists(atPath: data + "/replica.db-shm"))
        try disk.fill()

        expectClearFailure(
            try runUntilItExits(data),
            "cannot open \(data)/replica.db: the disk is full; free some space and start again", in: data)

        try disk.free()
        #expect(try status(data) == before, "nothing was lost")
    }

    @Test("a replica whose daemon was killed before the disk filled: the start stops at daemon.json")
    func restartAfterAKillOnAFullDisk() throws {
        let disk = try SmallDisk(in: temp)
        let data = disk.path + "/a"
        try temp.peerdOK(["init"], "disk/a")
        try temp.peerdOK(["item", "create", "Bolts", "5"], "disk/a")
        // A daemon killed with SIGKILL leaves its lock file and SQLite's -wal and -shm in place.
        let before = try status(data)
        let crashed = try Daemon.start(data: URL(fileURLWithPath: data))
        #expect(try crashed.kill())
        try FileManager.default.removeItem(atPath: data + "/daemon.json")
        try disk.fill()

        expectClearFailure(
            try runUntilItExits(data),
            "cannot write \(data)/daemon.json: the disk is full (No space left on device); free some space and start again",
            in: data)

        try disk.free()
        #expect(try status(data) == before, "nothing was lost")
        let daemon = try Daemon.start(data: URL(fileURLWithPath: data))
        #expect(try daemon.stop() == 0, "starts again once there is room: \(daemon.stderr)")
    }
}
