import DaemonClient
import Foundation
import TestSupport
import Testing

@testable import Replica

/// Unsigned history (docs/identity.md "Vouching for unsigned history"):
/// refused by default, let in by `peerd import --vouch`, and reported on
/// every replica that later syncs the feed.
@Suite("vouching for unsigned history")
struct VouchTests {
    let temp: TemporaryDirectory
    init() throws { temp = try TemporaryDirectory() }

    static let legacy = "legacy-till-7"

    /// Three items' events in the seed's shape, as another system wrote them: no scope, no entity
    /// type, no signatures.
    func legacyFile() throws -> String {
        var lines: [String] = []
        var seq = 0
        for (index, name) in ["Bolts", "Nuts", "Washers"].enumerated() {
            let item = UUID().uuidString.lowercased()
            for payload in [
                #"{"type":"Created","name":"\#(name)","quantity":\#(index + 1)}"#,
                #"{"type":"QuantityChanged","quantity":9}"#,
            ] {
                seq += 1
                lines.append(
                    #"{"replica_event_id":"\#(UUID().uuidString.lowercased())","replica_id":"\#(Self.legacy)","replica_write_offset":\#(seq),"replica_time_ms":\#(1_790_000_000_000 + seq),"entity_id":"\#(item)","payload":\#(payload),"server_offset":\#(seq),"server_time_ms":null}"#
                )
            }
        }
        let file = temp.path("legacy.ndjson")
        try (lines.joined(separator: "\n") + "\n").write(toFile: file, atomically: true, encoding: .utf8)
        return file
    }

    @Test("an unsigned file is refused without --vouch; with it, it is stored, served signed, and reported everywhere")
    func anOpenClusterVouch() throws {
        try temp.cluster("a", ["b"])
        let file = try legacyFile()
        let refused = try Executables.peerd(["import", file], data: temp.url("a"))
        #expect(refused.status == 1)
        #expect(
            refused.stderr.contains(
                "line 1: the events of feed \(Self.legacy)/default come without its origin's signed head"),
            "\(refused.stderr)")
        #expect(refused.stderr.contains("--vouch"))
        #expect(try Peek.eventCount(temp.url("a")) == 0)

        let vouched = try temp.peerdOK(["import", file, "--vouch"], "a")
        #expect(
            vouched.contains(
                "vouched for the unsigned feeds of \(Self.legacy) (scopes default): self-signed by this replica"),
            "\(vouched)")
        #expect(vouched.contains("imported 6 new events"))
        let aID = try ReplicaStatus.of(temp.url("a")).replica_id
        let offline = try temp.peerdOK(["status"], "a")
        #expect(
            offline.contains("vouched     \(Self.legacy) (scopes default): unsigned history that \(aID) vouched for"))

        // b, which never saw the file, verifies the feed against a's vouch and reports who vouched.
        let a = try Daemon.start(data: temp.url("a"), logLevel: "info")
        let b = try Daemon.start(data: temp.url("b"), peers: [a.address], logLevel: "info")
        let statuses = try Convergence.wait([temp.url("a"), temp.url("b")])
        #expect(statuses.map(\.event_count) == [6, 6])
        #expect(try b.metric(#"peersync_events_rejected_total{reason="signature"}"#) == 0, "\(b.stderr)")
        let status = try JSONValue.parse(try b.api!.request("GET", "/status").text)
        guard case .array(let vouches)? = status["vouched"], let vouch = vouches.first else {
            Issue.record("no vouched in b's /status: \(status)")
            return
        }
        #expect(vouch["replica_id"] == .string(Self.legacy) && vouch["vouched_by"] == .string(aID))
        #expect(vouch["signed_by"] == .string("self") && vouch["scopes"] == .array([.string("default")]))
        #expect(try temp.peerdOK(["status"], "b").contains("vouched     \(Self.legacy)"))
        let items = try b.api!.request("GET", "/items").text
        #expect(items.contains("Washers") && items.contains(#""quantity":9"#), "\(items)")
        _ = a
    }

    @Test("in a certified cluster only the admin may vouch: without its key, or with another, nothing is imported")
    func aCertifiedClusterVouch() throws {
        let admin = temp.path("admin.key")
        let other = temp.path("other.key")
        for key in [admin, other] { #expect(try Executables.run("peerd", ["admin-key", "--out", key]).status == 0) }
        try temp.cluster("a", ["b"])
        for dir in ["a", "b"] {
            let identity = try temp.peerdOK(["identity"], dir)
            let invite = try temp.peerdOK(
                ["invite", "--admin-key", admin, "--for", identity, "--read", "*", "--write", "default"], "a")
            try temp.peerdOK(["init", "--join", invite], dir)
        }
        let file = try legacyFile()
        let withoutKey = try Executables.peerd(["import", file, "--vouch"], data: temp.url("a"))
        #expect(withoutKey.status == 1 && withoutKey.stderr.contains("add --admin-key FILE"), "\(withoutKey.stderr)")
        let wrongKey = try Executables.peerd(["import", file, "--vouch", "--admin-key", other], data: temp.url("a"))
        #expect(
            wrongKey.status == 1 && wrongKey.stderr.contains("but this replica's certificate is signed by admin key"))
        let keyAlone = try Executables.peerd(["import", file, "--admin-key", admin], data: temp.url("a"))
        #expect(keyAlone.status == 2, "\(keyAlone.stderr)")
        #expect(try Peek.eventCount(temp.url("a")) == 0)

        let vouched = try temp.peerdOK(["import", file, "--vouch", "--admin-key", admin], "a")
        #expect(vouched.contains("signed by admin key"), "\(vouched)")
        let a = try Daemon.start(data: temp.url("a"), logLevel: "info")
        let b = try Daemon.start(data: temp.url("b"), peers: [a.address], logLevel: "info")
        let statuses = try Convergence.wait([temp.url("a"), temp.url("b")])
        #expect(statuses.map(\.event_count) == [6, 6])
        let status = try JSONValue.parse(try b.api!.request("GET", "/status").text)
        guard case .array(let vouches)? = status["vouched"] else {
            Issue.record("no vouched in b's /status: \(status)")
            return
        }
        #expect(vouches.first?["signed_by"] == .string("admin"), "\(status)")
        _ = a
    }
}
