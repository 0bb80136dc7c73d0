import DaemonClient
import Foundation
import SyncProtocol
import TestSupport
import Testing

@testable import Replica

/// A feed that arrives by file travels on (docs/events.md "Import"): what
/// an import verified reaches every replica later offered the feed,
/// through the same path as peers' certificates, also across a restart.
@Suite("imported feeds travel on")
struct ImportTravelTests {
    let temp: TemporaryDirectory
    init() throws { temp = try TemporaryDirectory() }

    /// O, which never meets the others, writes two items and exports them.
    func exportFromO() throws -> (origin: String, file: String) {
        try temp.peerdOK(["item", "create", "from the stick", "4"], "o")
        try temp.peerdOK(["item", "create", "second", "2"], "o")
        let file = temp.path("o.ndjson")
        try temp.peerdOK(["export", file], "o")
        return (try temp.replicaID("o"), file)
    }

    @Test("an import into a running daemon reaches the peer connected to it, with no refusal")
    func anImportIntoARunningDaemonTravels() throws {
        try temp.cluster("a", ["b", "o"])
        let (originID, file) = try exportFromO()
        let a = try Daemon.start(data: temp.url("a"), logLevel: "debug")
        let b = try Daemon.start(data: temp.url("b"), peers: [a.address], logLevel: "debug")
        #expect(b.waitForEvent(.peerIdentified), "\(b.stderr)")
        let imported = try temp.peerdOK(["import", file], "a")
        #expect(imported.contains("imported 2 new events"), "\(imported)")
        let arrived = try Poll.until(timeout: .seconds(30), every: .milliseconds(50)) {
            try temp.heldEvents(of: originID, in: "b") == 2
        }
        #expect(arrived, "b holds O's events; b's log:\n\(b.stderr)")
        #expect(try b.metric(#"peersync_events_rejected_total{reason="signature"}"#) == 0, "\(b.stderr)")
        #expect(b.events(.eventsRefused, ["cause": "unverifiable"]).isEmpty, "\(b.stderr)")
        _ = a
    }

    @Test("in a cluster with an admin key, an import into a running daemon reaches its peer too")
    func anImportTravelsInACertifiedCluster() throws {
        try temp.cluster("a", ["b", "o"])
        let admin = temp.path("admin.key")
        #expect(try Executables.run("peerd", ["admin-key", "--out", admin]).status == 0)
        for dir in ["a", "b", "o"] {
            let invite = try temp.peerdOK(
                [
                    "invite", "--admin-key", admin, "--for", try temp.peerdOK(["identity"], dir), "--read", "*",
                    "--write",
                    "default",
                ], "a")
            try temp.peerdOK(["init", "--join", invite], dir)
        }
        let (originID, file) = try exportFromO()
        let a = try Daemon.start(data: temp.url("a"), logLevel: "debug")
        let b = try Daemon.start(data: temp.url("b"), peers: [a.address], logLevel: "debug")
        #expect(b.waitForEvent(.peerIdentified), "\(b.stderr)")
        #expect(try temp.peerdOK(["import", file], "a").contains("imported 2 new events"))
        let arrived = try Poll.until(timeout: .seconds(30), every: .milliseconds(50)) {
            try temp.heldEvents(of: originID, in: "b") == 2
        }
        #expect(arrived, "b's log:\n\(b.stderr)\na's log:\n\(a.stderr)")
        #expect(try b.metric(#"peersync_events_rejected_total{reason="signature"}"#) == 0, "\(b.stderr)")
    }

    @Test("O → file → A, restarted before it syncs → B → C, which never talks to A: C ends with A's state hash")
    func aChainThroughARestart() throws {
        try temp.cluster("a", ["b", "c", "o"])
        let (originID, file) = try exportFromO()
        var a = try Daemon.start(data: temp.url("a"), logLevel: "info")
        #expect(try temp.peerdOK(["import", file], "a").contains("imported 2 new events"))
        try a.stop()
        a = try Daemon.start(data: temp.url("a"), logLevel: "info")
        let b = try Daemon.start(data: temp.url("b"), peers: [a.address], logLevel: "info")
        let ab = try Convergence.wait([temp.url("a"), temp.url("b")])
        #expect(ab.map(\.event_count) == [2, 2])
        try a.stop()
        let aHash = try ReplicaStatus.of(temp.url("a")).state_hash

        let c = try Daemon.start(data: temp.url("c"), peers: [b.address], logLevel: "info")
        let bc = try Convergence.wait([temp.url("b"), temp.url("c")])
        #expect(try temp.heldEvents(of: originID, in: "c") == 2)
        #expect(bc[1].state_hash == aHash)
        #expect(try c.metric(#"peersync_events_rejected_total{reason="signature"}"#) == 0, "\(c.stderr)")
        #expect(c.events(.peerIdentified, ["peer": try temp.replicaID("a")]).isEmpty, "\(c.stderr)")
        _ = b
    }

    /// The JSON of a daemon's `GET path`.
    func json(_ daemon: Daemon, _ path: String) throws -> JSONValue {
        try JSONValue.parse(try daemon.api!.request("GET", path).text)
    }

    @Test(
        "a feed refused for want of a key shows in peerd status, /status, /peers and the metrics, and is taken once the key arrives"
    )
    func aRefusalIsShownAndHealsWhenTheKeyArrives() throws {
        try temp.cluster("a", ["b", "o"])
        let (originID, file) = try exportFromO()
        let aID = try temp.replicaID("a")
        let a = try Daemon.start(data: temp.url("a"), logLevel: "debug")
        let b = try Daemon.start(data: temp.url("b"), peers: [a.address], logLevel: "debug")
        #expect(b.waitForEvent(.peerIdentified), "\(b.stderr)")
        // O's events and heads reach a's file without O's certificate (as a build before this one stored them).
        let lines = try String(contentsOfFile: file, encoding: .utf8).split(separator: "\n").map(String.init)
        let events = try lines.filter { $0.hasPrefix(#"{"replica_event_id""#) }.map {
            try EventJSON.event(fromLine: $0)
        }
        let proofs = try lines.filter { $0.hasPrefix(#"{"signed_head""#) || $0.hasPrefix(#"{"certificate""#) }.map {
            try ExportProof.parse($0)
        }
        let aLog = try Peek.log(temp.url("a"))
        try aLog.ingest(events)
        // b hears of the events before their signatures: a holds the run back, unproven, until they are stored.
        let heard = try Poll.until(timeout: .seconds(30), every: .milliseconds(50)) {
            try json(b, "/status")["sync"]?["events_missing"] == .int(2)
        }
        #expect(heard, "\(b.stderr)")
        try aLog.adoptSignedHeads(proofs.compactMap { if case .signedHead(let head) = $0 { head } else { nil } })

        let refused = try Poll.until(timeout: .seconds(30), every: .milliseconds(50)) {
            try b.metric(#"peersync_feeds_refused{reason="no_key"}"#) == 1
        }
        #expect(refused, "\(b.stderr)")
        let status = try json(b, "/status")
        guard case .array(let refusals)? = status["refused_feeds"], let refusal = refusals.first else {
            Issue.record("no refused_feeds in /status: \(status)")
            return
        }
        #expect(refusal["replica_id"] == .string(originID) && refusal["scope"] == .string("default"))
        #expect(refusal["peer"] == .string(aID) && refusal["reason"] == .string("no_key"))
        #expect(refusal["events"] == .int(2))
        #expect(
            refusal["message"]?.stringValue?.contains("no certificate of \(originID) has reached this replica") == true)
        let text = try temp.peerdOK(["status"], "b")
        #expect(text.contains("refused     refused 2 event(s) of feed \(originID)/default from peer \(aID)"), "\(text)")
        #expect(text.contains("import an export of \(originID)'s feed"), "\(text)")
        guard case .array(let rows)? = try json(b, "/peers")["peers"],
            let row = rows.first(where: { $0["replica_id"] == .string(aID) }),
            case .array(let rowRefusals)? = row["refused_feeds"]
        else {
            Issue.record("no /peers row for a with refused_feeds")
            return
        }
        #expect(rowRefusals.first?["reason"] == .string("no_key"))

        // O's certificate reaches a's file: a's daemon passes it on and sends the declined feed again.
        try aLog.storeCertificates(
            proofs.compactMap { proof in
                guard case .certificate(let bytes) = proof, let certificate = try? Certificate(bytes: bytes) else {
                    return nil
                }
                return (certificate.replicaID, bytes)
            })
        let healed = try Poll.until(timeout: .seconds(30), every: .milliseconds(50)) {
            try temp.heldEvents(of: originID, in: "b") == 2
        }
        #expect(healed, "b takes O's events once the key arrived; b's log:\n\(b.stderr)")
        #expect(try b.metric(#"peersync_feeds_refused{reason="no_key"}"#) == 0)
        #expect(try json(b, "/status")["refused_feeds"] == .array([]))
        _ = a
    }

    @Test("an import of 25,000 events in three batches into a running daemon: its peer is offered only signed runs")
    func aLargeImportIntoARunningDaemonIsOfferedSigned() throws {
        try temp.cluster("a", ["b", "o"])
        // O's own feed of 25,000 events, signed by O's identity key as O stores them, then exported.
        let originID = try temp.replicaID("o")
        var options = EventLog.Options()
        options.feedSigner = FeedSigner(try SigningKey.read(fromFile: temp.path("o/identity.key")))
        let origin = try EventLog.open(at: temp.path("o/replica.db"), options: options)
        let feed = FeedID(replicaID: originID)
        for start in stride(from: 1, through: 25_000, by: 5_000) {
            try origin.ingest(
                (start..<(start + 5_000)).map { seq in
                    Event(
                        eventID: UUID(), feed: feed, seq: UInt64(seq), timeMs: 1_790_000_000_000 + Int64(seq),
                        entityType: "item", entityID: UUID().uuidString.lowercased(),
                        payload: #"{"name":"bulk \#(seq)","quantity":\#(seq),"type":"Created"}"#)
                }, adopting: [])
        }
        let file = temp.path("o.ndjson")
        try temp.peerdOK(["export", file], "o")
        let a = try Daemon.start(data: temp.url("a"), logLevel: "debug")
        let b = try Daemon.start(data: temp.url("b"), peers: [a.address], logLevel: "debug")
        #expect(b.waitForEvent(.peerIdentified), "\(b.stderr)")
        #expect(try temp.peerdOK(["import", file], "a").contains("imported 25000 new events"))
        // One batch of 25,000 (only the last head is signed), stored on b's catch-up lane at nice +10:
        // beside the simulator's processes that keep both cores busy in `scripts/test.sh`, it waits its turn.
        let arrived = try Poll.until(timeout: .seconds(240), every: .milliseconds(100)) {
            try Peek.cursor(temp.url("b"))[feed] == 25_000
        }
        #expect(arrived, "b's log:\n\(b.stderr)\na's log:\n\(a.stderr)")
        #expect(try b.metric(#"peersync_events_rejected_total{reason="signature"}"#) == 0, "\(b.stderr)")
    }
}
