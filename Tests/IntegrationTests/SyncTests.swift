import Foundation
import Replica
import SyncProtocol
import TestSupport
import Testing

/// `peerd run` daemons as real processes syncing over TCP on 127.0.0.1.
@Suite("peerd run: sync between real daemons")
struct SyncTests {
    let temp: TemporaryDirectory
    init() throws { temp = try TemporaryDirectory() }

    /// How long a live edit may take to reach a connected peer. The daemon
    /// polls for local changes every 50 ms; an edit typically arrives in
    /// 30 to 60 ms, the rest is headroom for a loaded CI machine.
    static let liveDeadline: Duration = .seconds(1)

    func dir(_ name: String) -> URL { temp.url(name) }

    @discardableResult
    func ok(_ arguments: [String], _ dir: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        try temp.peerdOK(arguments, dir, sourceLocation: sourceLocation)
    }

    func cluster(_ first: String, _ others: String...) throws { try temp.cluster(first, others) }

    func items(_ dir: String, includeDeleted: Bool = false) throws -> [Item] {
        let json = try ok(["items", "--json"] + (includeDeleted ? ["--include-deleted"] : []), dir)
        return try JSONDecoder().decode([Item].self, from: Data(json.utf8))
    }

    /// Waits until `condition` holds and returns how long that took; fails
    /// the test (throws) when it does not hold within `timeout`.
    func timeUntil(
        _ what: String, timeout: Duration = .seconds(30), sourceLocation: SourceLocation = #_sourceLocation,
        _ condition: () throws -> Bool
    ) throws -> Duration {
        let start = ContinuousClock.now
        let held = try Poll.until(timeout: timeout, every: .milliseconds(5), condition)
        try #require(held, "\(what): not within \(timeout)", sourceLocation: sourceLocation)
        return ContinuousClock.now - start
    }

    @Test("two daemons converge after offline edits on both sides, deletion beating a concurrent rename")
    func twoDaemonsConverge() throws {
        try cluster("a", "b")
        // An item both replicas hold (carried by file), then edits on each
        // side while no daemon runs: a renames it, b deletes it.
        let shared = try ok(["item", "create", "Shared", "1"], "a")
        try ok(["export", temp.path("shared.ndjson")], "a")
        try ok(["import", temp.path("shared.ndjson")], "b")
        try ok(["item", "rename", shared, "Renamed on A"], "a")
        try ok(["item", "delete", shared], "b")
        let apples = try ok(["item", "create", "Apples", "3"], "a")
        try ok(["item", "note", apples, "from a"], "a")
        let pears = try ok(["item", "create", "Pears", "4"], "b")

        let a = try Daemon.start(data: dir("a"))
        let b = try Daemon.start(data: dir("b"), peers: [a.address])
        let statuses = try Convergence.wait([dir("a"), dir("b")])
        #expect(statuses.map(\.event_count) == [6, 6])
        for side in ["a", "b"] {
            #expect(try items(side).map(\.id) == [apples, pears], "\(side)")
            let all = try items(side, includeDeleted: true)
            #expect(all.count == 3, "\(side)")
            #expect(all.first { $0.id == shared }?.deleted == true, "deletion wins on \(side)")
            #expect(all.first { $0.id == apples }?.note == "from a", "\(side)")
        }
        #expect(a.events(.peerIdentified).count == 1)

        // Live edits, each way, written by another process while the daemons run.
        let live = try ok(["item", "create", "Live", "7"], "a")
        let toB = try timeUntil("a's live create reaching b") { try Peek.item(live, in: dir("b")) != nil }
        #expect(toB < Self.liveDeadline, "a → b took \(toB)")
        try ok(["item", "rename", live, "Renamed live on B"], "b")
        let toA = try timeUntil("b's live rename reaching a") {
            try Peek.item(live, in: dir("a"))?.name == "Renamed live on B"
        }
        #expect(toA < Self.liveDeadline, "b → a took \(toA)")
        try ok(["item", "delete", pears], "a")
        let deleteToB = try timeUntil("a's live delete reaching b") {
            try Peek.item(pears, in: dir("b"))?.deleted == true
        }
        #expect(deleteToB < Self.liveDeadline, "a → b took \(deleteToB)")

        let final = try Convergence.wait([dir("a"), dir("b")])
        #expect(final.map(\.event_count) == [9, 9])
        #expect(try items("b").map(\.name) == ["Apples", "Renamed live on B"])
        #expect(try b.stop() == 0, "b: \(b.stderr)")
        #expect(try a.stop() == 0, "a: \(a.stderr)")
    }

    @Test("three daemons given a line of static peers: peer exchange meshes them and an edit on A reaches C")
    func lineBecomesMesh() throws {
        try cluster("a", "b", "c")
        let fromC = try ok(["item", "create", "Made on C", "1"], "c")
        let a = try Daemon.start(data: dir("a"))
        let b = try Daemon.start(data: dir("b"), peers: [a.address])
        let c = try Daemon.start(data: dir("c"), peers: [b.address])
        try Convergence.wait([dir("a"), dir("b"), dir("c")])
        #expect(try Peek.item(fromC, in: dir("a")) != nil, "c's offline item reached a")

        let onA = try ok(["item", "create", "Made on A", "2"], "a")
        _ = try timeUntil("a's item reaching c") { try Peek.item(onA, in: dir("c")) != nil }
        let statuses = try Convergence.wait([dir("a"), dir("b"), dir("c")])
        #expect(statuses.map(\.event_count) == [2, 2, 2])
        #expect(Set(statuses.map(\.state_hash)).count == 1)

        // c only knew b; b told c where a is (peer exchange), so a and c connect directly.
        let (idA, idC) = (statuses[0].replica_id, statuses[2].replica_id)
        _ = try timeUntil("c meeting a through peer exchange") {
            !c.events(.peerIdentified, ["peer": idA]).isEmpty && !a.events(.peerIdentified, ["peer": idC]).isEmpty
        }
        for daemon in [c, b, a] { #expect(try daemon.stop() == 0, "\(daemon.name): \(daemon.stderr)") }
    }

    /// Appends `count` Created events of the feed `replicaID` after seq
    /// `after` to an NDJSON file (docs/events.md), imports it into `dir`,
    /// and returns the event ids by seq.
    func importBulk(into dir: String, replicaID: String, after: Int, count: Int) throws -> [UInt64: String] {
        var ids: [UInt64: String] = [:]
        var text = ""
        text.reserveCapacity(count * 300)
        for seq in (after + 1)...(after + count) {
            let eventID = UUID().uuidString.lowercased()
            ids[UInt64(seq)] = eventID
            text +=
                #"{"replica_event_id":"\#(eventID)","replica_id":"\#(replicaID)","scope":"default","#
                + #""replica_write_offset":\#(seq),"replica_time_ms":\#(1_700_000_000_000 + seq),"#
                + #""entity_type":"item","entity_id":"\#(UUID().uuidString.lowercased())","#
                + #""payload":{"name":"Bulk item \#(seq)","quantity":\#(seq),"type":"Created"},"#
                + #""server_offset":null,"server_time_ms":null}"# + "\n"
        }
        let file = temp.url("bulk-\(after).ndjson")
        try text.write(to: file, atomically: true, encoding: .utf8)
        #expect(try ok(["import", file.path], dir).contains("imported \(count) new events"))
        return ids
    }

    /// `peerd events --json` of `dir`: (feed, seq, event id) per line.
    func events(_ dir: String) throws -> [(feed: String, seq: UInt64, id: String)] {
        try ok(["events", "--json"], dir).split(separator: "\n").map { line in
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            let replica = try #require(object["replica_id"] as? String)
            let scope = try #require(object["scope"] as? String)
            let seq = try #require(object["replica_write_offset"] as? Int)
            return ("\(replica)/\(scope)", UInt64(seq), try #require(object["replica_event_id"] as? String))
        }
    }

    @Test("kill -9 mid-sync leaves a gap-free prefix, and a restart completes the sync without duplicates")
    func killNineMidSync() throws {
        try cluster("a", "b")
        // a's own events: a signs them as it imports them (docs/protocol.md "Signed feeds").
        let bulkReplica = try ReplicaStatus.of(dir("a")).replica_id
        // Not 30,000 events: in a debug build `peerd import` stores about
        // 1,500 events a second and `peerd status` hashes about 6,000
        // entities a second, so 30,000 would take 45 s. 6,000 still sync in
        // two batches (of at most 5,000 events, each one transaction) over
        // a couple of seconds, a wide window for the kill, and keep the test
        // near 10 s. Should b still swallow the whole log before the kill
        // (a release build, a faster machine), a gets twice as many events
        // more and b, keeping what it has, tries again; the kill must land
        // with b holding more than before and less than all, or the test fails.
        var ids: [UInt64: String] = [:]
        var a: Daemon?
        var heldBefore = 0
        var caught: ReplicaStatus?
        for attempt in 0..<3 where caught == nil {
            ids.merge(
                try importBulk(into: "a", replicaID: bulkReplica, after: ids.count, count: 6_000 << attempt),
                uniquingKeysWith: { old, _ in old })
            if a == nil { a = try Daemon.start(data: dir("a"), logLevel: "info") }
            let b = try Daemon.start(data: dir("b"), peers: [try #require(a).address], logLevel: "info")
            _ = try timeUntil("b storing its first batch") { try Peek.eventCount(dir("b")) > heldBefore }
            #expect(try b.kill(), "b died by SIGKILL")
            // The first process to open b's database after the crash.
            let status = try ReplicaStatus.of(dir("b"))
            let midSync = status.event_count > heldBefore && status.event_count < ids.count
            heldBefore = status.event_count
            if midSync { caught = status }
        }
        let total = ids.count
        let crashed = try #require(caught, "b held the whole log of \(total) events before the kill")

        // What b kept is a gap-free prefix of a's feed, event for event.
        let kept = try events("b")
        #expect(kept.count == heldBefore)
        #expect(Set(kept.map(\.feed)) == ["\(bulkReplica)/default"])
        #expect(kept.map(\.seq).sorted() == Array(1...UInt64(heldBefore)), "b's seqs are 1...\(heldBefore)")
        #expect(crashed.cursor.map(\.seq) == [UInt64(heldBefore)])
        #expect(kept.allSatisfy { ids[$0.seq] == $0.id }, "b holds a's events at their slots")

        let b = try Daemon.start(data: dir("b"), peers: [try #require(a).address], logLevel: "info")
        let statuses = try Convergence.wait([dir("a"), dir("b")])
        #expect(statuses.map(\.event_count) == [total, total])
        #expect(statuses[0].state_hash == statuses[1].state_hash)
        let synced = try events("b")
        #expect(synced.count == total)
        #expect(Set(synced.map(\.id)).count == total, "no event id twice")
        #expect(Set(synced.map(\.id)) == Set(ids.values))
        #expect(try b.stop() == 0, "b: \(b.stderr)")
        #expect(try #require(a).stop() == 0)
    }

    @Test("a daemon with another cluster's key is refused and exchanges no events")
    func wrongClusterKey() throws {
        try ok(["init"], "a")
        try ok(["init"], "c")  // its own, different cluster key
        try ok(["item", "create", "Only on A", "1"], "a")
        try ok(["item", "create", "Only on C", "1"], "c")
        let aBefore = try ReplicaStatus.of(dir("a"))
        let cBefore = try ReplicaStatus.of(dir("c"))

        let a = try Daemon.start(data: dir("a"))
        let c = try Daemon.start(data: dir("c"), peers: [a.address])
        // c dialed, so c checks a's proof first and refuses; a hears the refusal.
        #expect(c.waitForEvent(.connectionRefused, ["cause": "cluster_key_mismatch"]), "c: \(c.stderr)")
        #expect(a.waitForEvent(.connectionRefused, ["cause": "refused_by_peer"]), "a: \(a.stderr)")
        #expect(a.isRunning && c.isRunning)
        #expect(try c.stop() == 0)
        #expect(try a.stop() == 0)
        for daemon in [a, c] {
            #expect(daemon.events(.connectionEstablished).isEmpty, "\(daemon.name): \(daemon.stderr)")
            #expect(daemon.events(.peerIdentified).isEmpty, "\(daemon.name)")
        }
        #expect(try ReplicaStatus.of(dir("c")) == cBefore, "c received nothing")
        #expect(try ReplicaStatus.of(dir("a")) == aBefore, "a received nothing")
        #expect(try items("c").map(\.name) == ["Only on C"])
    }

    /// tcpdump's path, when it is installed and we may capture (root).
    static let tcpdump: String? = {
        guard geteuid() == 0 else { return nil }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        let directories = path.split(separator: ":").map(String.init) + ["/usr/sbin", "/usr/bin", "/sbin", "/bin"]
        return directories.map { "\($0)/tcpdump" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }()

    @Test(
        "captured traffic between two daemons holds no item name, note or payload key",
        .enabled(if: SyncTests.tcpdump != nil, "needs tcpdump (scripts/setup.sh installs it) and root to capture"))
    func trafficIsEncrypted() throws {
        try cluster("a", "b")
        let marker = UUID().uuidString
        let (nameA, noteA) = ("ZebraSecretName-\(marker)", "OkapiSecretNote-\(marker)")
        let (nameB, noteB) = ("QuokkaSecretName-\(marker)", "NarwhalSecretNote-\(marker)")
        let itemA = try ok(["item", "create", nameA, "4242"], "a")
        try ok(["item", "note", itemA, noteA], "a")

        let a = try Daemon.start(data: dir("a"))
        // b dials a and a dials no one, so every byte between them has a's port.
        let pcap = temp.url("sync.pcap")
        let capture = try ChildProcess(
            URL(fileURLWithPath: try #require(Self.tcpdump)),
            // --immediate-mode: hand each packet over as it arrives; by default
            // libpcap delivers in blocks once a second and a stop drops the rest.
            ["-i", "lo", "--immediate-mode", "-w", pcap.path, "-U", "tcp port \(a.port)"], name: "tcpdump")
        try #require(
            capture.stderr.wait(timeout: .seconds(30)) { lines in lines.contains { $0.contains("listening on") } }
                || !capture.isRunning,
            "tcpdump did not start")
        try #require(capture.isRunning, "tcpdump: \(capture.stderr.text)")

        let b = try Daemon.start(data: dir("b"), peers: [a.address])
        try Convergence.wait([dir("a"), dir("b")])
        // And one item made while both run, so a live push is captured too.
        let itemB = try ok(["item", "create", nameB, "77"], "b")
        try ok(["item", "note", itemB, noteB], "b")
        let statuses = try Convergence.wait([dir("a"), dir("b")])
        #expect(try items("a").map(\.name).sorted() == [nameB, nameA].sorted())
        try capture.stop(with: SIGINT)
        try b.stop()
        try a.stop()

        let bytes = try Data(contentsOf: pcap)
        // The capture saw the sync, so an empty or misfiltered capture fails
        // here: the handshake's clear-text magic, at least the three
        // handshake frames and two batches of events, and at least as many
        // bytes as those frames (151) and the names and notes they carried.
        // (A run carries about 12 packets and 1,250 bytes of TCP data.)
        let payload = Self.tcpPayloadBytes(inPcap: bytes)
        let carried = 151 + [nameA, noteA, nameB, noteB].map(\.utf8.count).reduce(0, +)
        #expect(payload.packets >= 5, "\(payload.packets) packets with data: \(capture.stderr.text)")
        #expect(payload.bytes >= carried, "\(payload.bytes) bytes of TCP data: \(capture.stderr.text)")
        #expect(bytes.range(of: Data("PSYN".utf8)) != nil, "the handshake init is in the capture")
        let secrets = [
            nameA, noteA, nameB, noteB, itemA, itemB, statuses[0].replica_id, statuses[1].replica_id,
            #""quantity""#, #""name""#, #""note""#, "NoteChanged", "Created",
        ]
        for secret in secrets {
            #expect(bytes.range(of: Data(secret.utf8)) == nil, "\(secret) is readable in the capture")
        }
    }

    /// Packets that carry TCP data in a classic pcap file of Ethernet
    /// frames (what tcpdump writes for lo), and how many data bytes.
    static func tcpPayloadBytes(inPcap pcap: Data) -> (packets: Int, bytes: Int) {
        let bytes = [UInt8](pcap)
        guard bytes.count >= 24 else { return (0, 0) }
        let littleEndian = bytes[0] == 0xD4 || bytes[0] == 0x4D
        func u32(_ at: Int) -> Int {
            let field = bytes[at..<(at + 4)].map(Int.init)
            let ordered = littleEndian ? Array(field.reversed()) : field
            return ordered.reduce(0) { $0 << 8 | $1 }
        }
        var (packets, total) = (0, 0)
        var offset = 24
        while offset + 16 <= bytes.count {
            let captured = u32(offset + 8)
            let frame = offset + 16
            offset = frame + captured
            guard offset <= bytes.count, captured >= 14 + 20 + 20 else { continue }
            // Ethernet (14 bytes), IPv4 (IHL words), TCP (data offset words).
            guard bytes[frame + 12] == 0x08, bytes[frame + 13] == 0x00 else { continue }
            let ip = frame + 14
            let ipLength = Int(bytes[ip + 2]) << 8 | Int(bytes[ip + 3])
            let ipHeader = Int(bytes[ip] & 0x0F) * 4
            let tcpHeader = Int(bytes[ip + ipHeader + 12] >> 4) * 4
            let data = ipLength - ipHeader - tcpHeader
            if data > 0 {
                packets += 1
                total += data
            }
        }
        return (packets, total)
    }

    @Test(
        "peerd peers lists a configured peer as connected, an unreachable one with its retry, and says when no daemon runs"
    )
    func peersCommand() throws {
        try cluster("a", "b")
        let a = try Daemon.start(data: dir("a"))
        let b = try Daemon.start(data: dir("b"), peers: [a.address, "127.0.0.1:1"])
        try Convergence.wait([dir("a"), dir("b")])
        struct Row: Decodable {
            var source: String
            var address: String?
            var state: String
            var events_to_receive: UInt64
            var events_to_send: UInt64
        }
        var rows: [Row] = []
        _ = try timeUntil("b's peer list showing a connected") {
            let result = try Executables.peerd(["peers", "--json"], data: dir("b"))
            guard result.status == 0 else { return false }
            rows = try JSONDecoder().decode([Row].self, from: Data(result.stdout.utf8))
            return rows.contains { $0.address == a.address && $0.state == "connected" }
        }
        let toA = try #require(rows.first { $0.address == a.address })
        #expect(toA.source == "configured")
        #expect(toA.events_to_receive == 0 && toA.events_to_send == 0)
        let unreachable = try #require(rows.first { $0.address == "127.0.0.1:1" })
        #expect(unreachable.state == "waiting" || unreachable.state == "dialing")

        #expect(try b.stop() == 0)
        let after = try Executables.peerd(["peers"], data: dir("b"))
        #expect(after.status == 1)
        #expect(after.stderr.contains("no daemon is running"))
        #expect(try a.stop() == 0)
    }
}
