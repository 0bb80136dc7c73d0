import Foundation
import Replica
import TestSupport
import Testing

/// `peerd check` as a real process: its lines, its JSON and its exit codes
/// on clean, edited and damaged data directories, and beside a daemon.
@Suite("peerd check")
struct CheckCommandTests {
    let temp: TemporaryDirectory
    init() throws { temp = try TemporaryDirectory() }

    private func database(_ dir: String) -> String { temp.url(dir).appendingPathComponent("replica.db").path }

    /// `peerd check` with `arguments` on `dir`.
    private func check(_ dir: String, _ arguments: [String] = []) throws -> ProcessResult {
        try Executables.peerd(["check"] + arguments, data: temp.url(dir))
    }

    /// `peerd check --json` on `dir`, parsed, with the exit status.
    private func checkJSON(_ dir: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> (
        status: Int32, json: [String: Any]
    ) {
        let result = try check(dir, ["--json"])
        let json = try #require(
            try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any],
            "stdout: \(result.stdout)\nstderr: \(result.stderr)", sourceLocation: sourceLocation)
        return (result.status, json)
    }

    /// A replica with `count` items made through the CLI; returns its replica id.
    private func replica(_ dir: String, items count: Int) throws -> String {
        try temp.peerdOK(["init"], dir)
        for index in 1...count { try temp.peerdOK(["item", "create", "Item \(index)", "\(index)"], dir) }
        let status = try temp.peerdOK(["status", "--json"], dir)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(status.utf8)) as? [String: Any])
        return try #require(object["replica_id"] as? String)
    }

    @Test("a clean replica passes: one ok line and exit 0, or ok true in JSON")
    func cleanReplicaPasses() throws {
        _ = try replica("a", items: 3)
        let result = try check("a")
        #expect(result.status == 0, "\(result)")
        #expect(result.stdout == "ok: 3 events in 1 feeds, integrity_check ok\n")
        let refolded = try check("a", ["--refold"])
        #expect(refolded.stdout == "ok: 3 events in 1 feeds, integrity_check ok, 3 projections refolded\n")

        let (status, json) = try checkJSON("a")
        #expect(status == 0)
        #expect(json["ok"] as? Bool == true)
        #expect(json["events"] as? Int == 3)
        #expect(json["feeds"] as? Int == 1)
        #expect(json["integrity_check"] as? [String] == ["ok"])
        #expect((json["findings"] as? [Any])?.isEmpty == true)
    }

    @Test("an event deleted from the middle of a feed is a gap naming feed and seq, with exit 1")
    func deletedEventIsAGap() throws {
        let replicaID = try replica("a", items: 5)
        let deleted = try Executables.runSystem("sqlite3", [database("a"), "DELETE FROM events WHERE seq = 3"])
        try #require(deleted.status == 0, "\(deleted)")

        let result = try check("a")
        #expect(result.status == 1)
        #expect(result.stdout == "gap: feed \(replicaID)/default: seq 3 is missing (it holds seq 2, then 4)\n")
        #expect(result.stderr.hasPrefix("peerd: error: 1 problem in \(database("a")); see docs/operations.md"))

        let (status, json) = try checkJSON("a")
        #expect(status == 1)
        #expect(json["ok"] as? Bool == false)
        let findings = try #require(json["findings"] as? [[String: Any]])
        #expect(findings.count == 1)
        #expect(findings.first?["kind"] as? String == "gap")
        #expect(findings.first?["feed"] as? String == "\(replicaID)/default")
        #expect(findings.first?["seq"] as? Int == 3)
        #expect((findings.first?["detail"] as? String)?.contains("seq 3 is missing") == true)
    }

    @Test("4 KiB of random bytes in the middle of a large replica.db is reported as damaged, with exit 1")
    func damagedPageIsDamaged() throws {
        try temp.peerdOK(["init"], "a")
        do {
            let log = try EventLog.open(at: database("a"))
            let note = String(repeating: "n", count: 300)
            for batch in 0..<6 {
                try log.append((0..<500).map { NewEvent(item: "i\(batch * 500 + $0)", .noteChanged(note: note)) })
            }
            try log.writePendingProjections()
        }
        let path = database("a")
        let size = try #require(try FileManager.default.attributesOfItem(atPath: path)[.size] as? UInt64)
        #expect(size > 500 * 4096, "the log spans many pages")
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: path))
        try handle.seek(toOffset: size / 2 / 4096 * 4096)
        var rng = SplitMix64(seed: 8192)
        try handle.write(contentsOf: Data((0..<4096).map { _ in UInt8.random(in: 0...255, using: &rng) }))
        try handle.close()

        let result = try check("a")
        #expect(result.status == 1, "\(result)")
        #expect(result.stdout.contains("damaged: "), "\(result)")
        let (status, json) = try checkJSON("a")
        #expect(status == 1)
        let findings = try #require(json["findings"] as? [[String: Any]])
        #expect(findings.contains { $0["kind"] as? String == "damaged" })
    }

    @Test("a file that cannot be opened at all exits 1 with the reason, in text and in JSON")
    func unopenableFile() throws {
        try FileManager.default.createDirectory(at: temp.url("junk"), withIntermediateDirectories: true)
        try Data((0..<8192).map { UInt8(truncatingIfNeeded: $0 &* 31) }).write(
            to: URL(fileURLWithPath: database("junk")))
        let result = try check("junk")
        #expect(result.status == 1)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr.hasPrefix("peerd: error: cannot check \(database("junk")): "))
        #expect(result.stderr.contains("damaged or not a database"))

        let (status, json) = try checkJSON("junk")
        #expect(status == 1)
        #expect(json["ok"] as? Bool == false)
        #expect((json["findings"] as? [[String: Any]])?.first?["kind"] as? String == "damaged")

        let missing = try check("nothing-here")
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("no replica in"))
    }

    @Test("check runs beside a running daemon, which keeps serving writes")
    func besideARunningDaemon() throws {
        _ = try replica("a", items: 2)
        let daemon = try Daemon.start(data: temp.url("a"))
        let api = try #require(daemon.api)
        let created = try api.request("POST", "/items", body: #"{"name":"Live","quantity":1}"#)
        #expect(created.status == 201)

        let first = try check("a")
        #expect(first.status == 0, "\(first)")
        #expect(first.stdout == "ok: 3 events in 1 feeds, integrity_check ok\n")
        let again = try api.request("POST", "/items", body: #"{"name":"After the check","quantity":2}"#)
        #expect(again.status == 201, "the daemon still writes: \(again.status) \(again.text)")
        #expect(try check("a").stdout == "ok: 4 events in 1 feeds, integrity_check ok\n")
        #expect(try daemon.stop() == 0, "\(daemon.stderr)")
    }
}
