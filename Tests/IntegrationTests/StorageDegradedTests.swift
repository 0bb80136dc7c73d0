import DaemonClient
import Foundation
import Glibc
import Replica
import SyncProtocol
import TestSupport
import Testing

/// A damaged database under a running daemon: the fault surfaces once and
/// the replica is degraded (docs/operations.md, "Storage faults"), with no
/// hot loop, while what is still readable is still served.
@Suite("peerd run: a damaged database degrades the replica")
struct StorageDegradedTests {
    let temp: TemporaryDirectory
    init() throws { temp = try TemporaryDirectory() }

    /// `count` events of one foreign feed as an export file (300 items, then quantity changes).
    /// `count` events of `a`'s own feed (which it signs as it imports them).
    func exportFile(events count: Int) throws -> String {
        let origin = try ReplicaStatus.of(temp.url("a")).replica_id
        var lines: [String] = []
        for seq in 1...count {
            let payload =
                seq <= 300
                ? #"{"type":"Created","name":"n\#(seq)","quantity":\#(seq)}"#
                : #"{"type":"QuantityChanged","quantity":\#(seq)}"#
            lines.append(
                #"{"replica_event_id":"\#(UUID().uuidString.lowercased())","replica_id":"\#(origin)","scope":"default","#
                    + #""replica_write_offset":\#(seq),"replica_time_ms":\#(1_700_000_000_000 + seq),"#
                    + #""entity_type":"item","entity_id":"i\#(seq % 300)","payload":\#(payload)}"#)
        }
        let path = temp.path("events.ndjson")
        try (lines.joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// Overwrites one leaf page of the block rows (found with `sqlite3`'s
    /// dbstat) with seeded random bytes, as a failing disk would: an import
    /// stores its events as block rows (docs/storage.md "Block rows"), here
    /// about one block of 32 events a leaf page.
    func damageABlocksPage(of database: String, leaf: Int) throws {
        let query = """
            select pageno from dbstat where name = 'event_blocks' and pagetype = 'leaf'
            order by pageno limit 1 offset \(leaf)
            """
        let result = try ChildProcess.run(URL(fileURLWithPath: "/usr/bin/sqlite3"), [database, query])
        let page = try #require(UInt64(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)), "\(result)")
        var random = SplitMix64(seed: UInt64(leaf))
        try FileDamage.overwritePage(of: database, at: (page - 1) * 4096, using: &random)
    }

    /// `peersync_storage_faults_total` from the daemon's metrics.
    func faults(_ api: DaemonEndpoint) throws -> Int {
        let prefix = "peersync_storage_faults_total "
        let line = try #require(
            try api.request("GET", "/metrics").text.split(separator: "\n").first { $0.hasPrefix(prefix) })
        return try #require(Int(line.dropFirst(prefix.count)))
    }

    /// User and system CPU seconds the process has used.
    func cpuSeconds(_ pid: Int32) throws -> Double {
        let stat = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
        let fields = stat[stat.index(after: stat.lastIndex(of: ")")!)...].split(separator: " ")
        return (Double(fields[11])! + Double(fields[12])!) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    @Test("an export that meets the damage names the damaged database, not the file, and leaves no file")
    func anExportOfADamagedDatabaseSaysSo() throws {
        try temp.peerdOK(["init"], "a")
        try temp.peerdOK(["import", try exportFile(events: 4_000)], "a")
        try damageABlocksPage(of: temp.path("a/replica.db"), leaf: 90)
        let out = temp.path("out.ndjson")
        let export = try Executables.peerd(["export", out], data: temp.url("a"))
        #expect(export.status == 1, "\(export)")
        #expect(export.stderr.contains("replica.db is damaged"), "\(export.stderr)")
        #expect(!export.stderr.contains("cannot write"), "\(export.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out))
        #expect(!FileManager.default.fileExists(atPath: out + ".partial"))
    }

    @Test("an HTTP read that meets the damage degrades the replica too: logged once, /health and the metrics say so")
    func anAPIReadOfADamagedPageDegradesTheReplica() throws {
        try temp.peerdOK(["init"], "a")
        try temp.peerdOK(["import", try exportFile(events: 4_000)], "a")
        try damageABlocksPage(of: temp.path("a/replica.db"), leaf: 90)
        let a = try Daemon.start(data: temp.url("a"), logLevel: "info")
        let api = try #require(a.api)
        #expect(try api.request("GET", "/health").status == 200, "nothing read the damage yet")

        let page = try api.request("GET", "/log?after=0&limit=10000")
        #expect(page.status == 503 && page.text.contains("storage_degraded"), "\(page.status) \(page.text)")
        let health = try api.request("GET", "/health")
        #expect(health.status == 503 && health.text.contains("\"damaged\""), "\(health.text)")
        #expect(a.waitForEvent(.storageDegraded, ["while": "read"]), "\(a.stderr)")
        #expect(try api.request("GET", "/metrics").text.contains("peersync_storage_degraded 1"))
        #expect(try faults(api) >= 1)
        // The CLI still goes through the degraded daemon: its status says so.
        let status = try temp.peerdOK(["status", "--json"], "a")
        let storage = (try JSONSerialization.jsonObject(with: Data(status.utf8)) as? [String: Any])?["storage"]
        #expect((storage as? [String: Any])?["state"] as? String == "degraded", "\(status)")
        #expect(try a.stop() == 0, "\(a.stderr)")
    }

    @Test("a damaged page: logged once, /health and /status say degraded, no hot loop, the readable events still sync")
    func aDamagedPageDegradesTheReplicaOnce() throws {
        try temp.cluster("a", ["b"])
        try temp.peerdOK(["import", try exportFile(events: 4_000)], "a")
        try damageABlocksPage(of: temp.path("a/replica.db"), leaf: 90)

        let a = try Daemon.start(data: temp.url("a"), logLevel: "info")
        let b = try Daemon.start(data: temp.url("b"), peers: [a.address], logLevel: "info")
        #expect(a.waitForEvent(.storageDegraded, ["fault": "damaged"]), "\(a.stderr)")
        let api = try #require(a.api)

        let health = try api.request("GET", "/health")
        #expect(health.status == 503, "\(health.text)")
        let healthBody = try JSONSerialization.jsonObject(with: Data(health.body)) as? [String: Any]
        #expect(healthBody?["status"] as? String == "degraded")
        #expect((healthBody?["storage"] as? [String: Any])?["fault"] as? String == "damaged")

        // What can be read is served: /status at once, and the events before the damage reach b.
        let started = ContinuousClock.now
        let status = try api.request("GET", "/status", timeoutMs: 5_000)
        #expect(ContinuousClock.now - started < .seconds(2), "/status answers at once")
        #expect(status.status == 200)
        let storage = (try JSONSerialization.jsonObject(with: Data(status.body)) as? [String: Any])?["storage"]
        #expect((storage as? [String: Any])?["state"] as? String == "degraded", "\(status.text)")
        let received = try Poll.until(timeout: .seconds(30)) { try ReplicaStatus.of(b.data).event_count > 1_000 }
        #expect(received, "b did not get the events before the damage:\n\(b.stderr)")

        // No hot loop: until sync has tried the failed read again (the fault
        // counter moves; it retries every 5 s), a uses little CPU and writes few lines.
        let recordsBefore = a.events.count
        let cpuBefore = try cpuSeconds(a.child.pid)
        let faultsBefore = try faults(api)
        let since = ContinuousClock.now
        let retried = try Poll.until(timeout: .seconds(20), every: .milliseconds(100)) {
            try faults(api) > faultsBefore
        }
        #expect(retried, "the failed read was tried again")
        let elapsed = (ContinuousClock.now - since).components
        let seconds = Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18
        #expect(try cpuSeconds(a.child.pid) - cpuBefore < max(0.5, seconds * 0.2), "a spins")
        #expect(a.events.count - recordsBefore < 10, "\(a.events.suffix(20).map(\.line))")
        #expect(a.events(.storageDegraded).count == 1, "logged once")
        #expect(try api.request("GET", "/metrics").text.contains("peersync_storage_degraded 1"))
        #expect(a.isRunning)
        #expect(try a.stop() == 0, "\(a.stderr)")
        #expect(try b.stop() == 0)
    }
}
