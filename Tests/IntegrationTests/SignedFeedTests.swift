import DaemonClient
import Foundation
import SyncProtocol
import TestSupport
import Testing

@testable import Replica

/// Signed feeds with real daemons (docs/protocol.md "Signed feeds"): a relay
/// whose database was doctored serves altered and invented events of
/// another replica's feed, and every receiver refuses them; `peerd export`
/// and `peerd import` verify as sync does.
@Suite("signed feeds")
struct SignedFeedIntegrationTests {
    let temp: TemporaryDirectory
    init() throws { temp = try TemporaryDirectory() }

    /// Runs SQL on a stopped replica's database, as a tool that edits the file would.
    func doctor(_ dir: String, _ sql: String) throws {
        try SQLiteConnection(path: temp.path("\(dir)/replica.db"), create: false).execute(sql)
    }

    @Test(
        "a relay that alters a payload or invents an event of another replica's feed is caught; nothing of it is stored"
    )
    func aDoctoredRelayIsCaught() throws {
        try temp.cluster("alice", ["mallory", "bob"])
        let aliceID = try temp.replicaID("alice")
        let malloryID = try temp.replicaID("mallory")
        var alice = try Daemon.start(data: temp.url("alice"))
        var mallory = try Daemon.start(data: temp.url("mallory"), peers: [alice.address])
        for name in ["first", "second", "third"] { try alice.createItem(name) }
        _ = try Convergence.wait([temp.url("alice"), temp.url("mallory")])
        _ = try mallory.stop()
        _ = try alice.stop()
        // Mallory alters alice's seq 2 and invents a seq 4 for her, keeping the head's link and signature
        // (those alice signed at seq 3), so that mallory serves the run as if alice had signed it to seq 4:
        // an honest node never sends a run that no signature it holds covers.
        try doctor(
            "mallory",
            """
            UPDATE events SET payload = '{"name":"forged","quantity":999,"type":"Created"}'
            WHERE feed = (SELECT id FROM feeds WHERE replica_id = '\(aliceID)') AND seq = 2;
            INSERT INTO events (local_offset, feed, seq, event_id, time_ms, entity, payload, arrival_ms)
            SELECT max(local_offset) + 1, (SELECT id FROM feeds WHERE replica_id = '\(aliceID)'), 4,
                   randomblob(16), max(time_ms) + 1, max(entity), '{"type":"Deleted"}', max(arrival_ms) FROM events;
            UPDATE feeds SET head_seq = 4 WHERE replica_id = '\(aliceID)';
            """)
        mallory = try Daemon.start(data: temp.url("mallory"), logLevel: "info")
        try mallory.createItem("mallory's own")
        let bob = try Daemon.start(data: temp.url("bob"), peers: [mallory.address], logLevel: "info")
        let ownArrived = try Poll.until(timeout: .seconds(30), every: .milliseconds(50)) {
            try temp.heldEvents(of: malloryID, in: "bob") == 1
        }
        #expect(ownArrived, "bob holds mallory's own event")
        #expect(
            bob.waitForEvent(.eventsRefused, ["cause": "unverifiable", "peer": malloryID]) {
                $0["detail"]?.contains("\(aliceID)/default") == true
            }, "\(bob.stderr)")
        let signatureRefusals = #"peersync_events_rejected_total{reason="signature"}"#
        let refused = try Poll.until(timeout: .seconds(30), every: .milliseconds(50)) {
            try bob.metric(signatureRefusals) ?? 0 >= 4
        }
        let count = try bob.metric(signatureRefusals)
        #expect(refused, "\(String(describing: count))")
        #expect(try temp.heldEvents(of: aliceID, in: "bob") == 0, "nothing of alice's feed came from mallory")
        #expect(try !bob.api!.request("GET", "/items").text.contains("forged"))

        // The honest copy from alice is taken: the refusal was of mallory's bytes, not of alice's feed.
        alice = try Daemon.start(data: temp.url("alice"), peers: [bob.address])
        let honest = try Poll.until(timeout: .seconds(30), every: .milliseconds(50)) {
            try temp.heldEvents(of: aliceID, in: "bob") == 3
        }
        #expect(honest, "bob holds alice's three events from alice")
        #expect(try !bob.api!.request("GET", "/items").text.contains("forged"))
    }

    /// Writes `lines` to a file and runs `peerd import` of it on `dir`.
    func importLines(_ lines: [String], into dir: String) throws -> ProcessResult {
        let file = temp.path("\(dir)-import.ndjson")
        try (lines.joined(separator: "\n") + "\n").write(toFile: file, atomically: true, encoding: .utf8)
        return try Executables.peerd(["import", file], data: temp.url(dir))
    }

    @Test(
        "an export carries its signatures; an import verifies them and refuses an altered or invented line, naming it")
    func exportAndImportVerifyAsSyncDoes() throws {
        try temp.cluster("alice", ["bob", "carol"])
        let aliceID = try temp.replicaID("alice")
        for name in ["first", "second"] { try temp.peerdOK(["item", "create", name, "1"], "alice") }
        let export = try temp.peerdOK(["export"], "alice").split(separator: "\n").map(String.init)
        #expect(
            export.count == 4 && export[2].hasPrefix(#"{"certificate":"#) && export[3].hasPrefix(#"{"signed_head":"#))

        // Altered: the second event's quantity. The whole file is refused, the head's line named.
        let altered = export.enumerated().map {
            $0.offset == 1 ? $0.element.replacingOccurrences(of: #""quantity":1"#, with: #""quantity":7"#) : $0.element
        }
        let refused = try importLines(altered, into: "bob")
        #expect(refused.status != 0)
        #expect(
            refused.stderr.contains("line 4: the signed head of feed \(aliceID)/default at seq 2 does not match"),
            "\(refused.stderr)")
        #expect(try Peek.eventCount(temp.url("bob")) == 0)
        // Invented: a third event of alice's with no signed head for it.
        let invented = export[1]
            .replacingOccurrences(of: #""replica_write_offset":2"#, with: #""replica_write_offset":3"#)
            .replacingOccurrences(of: String(export[1].split(separator: "\"")[3]), with: UUID().uuidString.lowercased())
        let inventedResult = try importLines(Array(export[0...1]) + [invented] + Array(export[2...]), into: "bob")
        #expect(
            inventedResult.status != 0 && inventedResult.stderr.contains("does not match"), "\(inventedResult.stderr)")
        #expect(try Peek.eventCount(temp.url("bob")) == 0)
        // Without the signatures, events of another replica are refused too.
        let unsigned = try importLines(Array(export[0...1]), into: "bob")
        #expect(
            unsigned.stderr.contains(
                "line 1: the events of feed \(aliceID)/default come without its origin's signed head"),
            "\(unsigned.stderr)")

        // The honest file imports, and bob serves it on, signed, to carol, who verifies it in sync.
        let honest = try importLines(export, into: "bob")
        #expect(honest.status == 0 && honest.stdout.contains("imported 2 new events"), "\(honest.stderr)")
        let bob = try Daemon.start(data: temp.url("bob"))
        let carol = try Daemon.start(data: temp.url("carol"), peers: [bob.address])
        let statuses = try Convergence.wait([temp.url("bob"), temp.url("carol")])
        #expect(statuses.map(\.event_count) == [2, 2])
        #expect(try carol.metric(#"peersync_events_rejected_total{reason="signature"}"#) == 0)
    }
}
