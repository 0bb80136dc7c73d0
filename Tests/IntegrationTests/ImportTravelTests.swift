import DaemonClient
import Foundation
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

    func replicaID(_ dir: String) throws -> String { try ReplicaStatus.of(temp.url(dir)).replica_id }

    func heldEvents(of origin: String, in dir: String) throws -> Int {
        try Peek.log(temp.url(dir)).events(in: FeedID(replicaID: origin), seqs: 1...1_000, limit: 1_000).count
    }

    /// O, which never meets the others, writes two items and exports them.
    func exportFromO() throws -> (origin: String, file: String) {
        try temp.peerdOK(["item", "create", "from the stick", "4"], "o")
        try temp.peerdOK(["item", "create", "second", "2"], "o")
        let file = temp.path("o.ndjson")
        try temp.peerdOK(["export", file], "o")
        return (try replicaID("o"), file)
    }

    @Test("an import into a running daemon reaches the peer connected to it, with no refusal")
    func anImportIntoARunningDaemonTravels() throws {
        try temp.cluster("a", ["b", "o"])
        let (originID, file) = try exportFromO()
        let a = try Daemon.start(data: temp.url("a"), logLevel: "info")
        let b = try Daemon.start(data: temp.url("b"), peers: [a.address], logLevel: "info")
        #expect(b.waitForLog("peer identified"), "\(b.stderr)")
        let imported = try temp.peerdOK(["import", file], "a")
        #expect(imported.contains("imported 2 new events"), "\(imported)")
        let arrived = try Poll.until(timeout: .seconds(30), every: .milliseconds(50)) {
            try heldEvents(of: originID, in: "b") == 2
        }
        #expect(arrived, "b holds O's events; b's log:\n\(b.stderr)")
        #expect(try b.metric(#"peersync_events_rejected_total{reason="signature"}"#) == 0, "\(b.stderr)")
        #expect(b.logLines(containing: "refused unverifiable events").isEmpty, "\(b.stderr)")
        _ = a
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
        #expect(try heldEvents(of: originID, in: "c") == 2)
        #expect(bc[1].state_hash == aHash)
        #expect(try c.metric(#"peersync_events_rejected_total{reason="signature"}"#) == 0, "\(c.stderr)")
        #expect(c.logLines(containing: "peer identified", "peer=\(try replicaID("a"))").isEmpty, "\(c.stderr)")
        _ = b
    }
}
