import DaemonClient
import Foundation
import SyncProtocol
import TestSupport
import Testing

@testable import Replica

/// Checkpoints between running daemons (docs/operations.md "Checkpoints"
/// and "Dropping history"): one made beside a daemon travels to every
/// replica, a new device starts from it over TCP, and the history goes
/// only once every member acknowledged it.
@Suite("checkpoint gossip")
struct CheckpointGossipTests {
    let temp: TemporaryDirectory
    init() throws { temp = try TemporaryDirectory() }

    private func json(_ daemon: Daemon, _ path: String) throws -> [String: Any] {
        try jsonObject(try daemon.api!.request("GET", path).text)
    }

    private func history(_ daemon: Daemon) throws -> [String: Any] {
        try json(daemon, "/status")["history"] as? [String: Any] ?? [:]
    }

    @Test("B takes A's checkpoint, both drop the history, and a new device C starts from it over TCP with A's state")
    func travelDropAndStart() throws {
        try temp.cluster("a", ["b", "c"])
        for index in 0..<12 { try temp.peerdOK(["item", "create", "part-\(index)", "\(index)"], "a") }
        let keep = ["--keep-history", "0d"]
        let a = try Daemon.start(data: temp.url("a"), logLevel: "info", extra: keep)
        let b = try Daemon.start(data: temp.url("b"), peers: [a.address], logLevel: "info", extra: keep)
        _ = try Convergence.wait([temp.url("a"), temp.url("b")])
        let made = try temp.peerdOK(["checkpoint", "make", "--json"], "a")
        let id = try #require(try jsonObject(made)["id"] as? String)
        #expect(b.waitForEvent(.checkpointTaken, ["checkpoint": id]), "\(b.stderr)")
        #expect(a.waitForEvent(.historyDropped, ["checkpoint": id, "events": "12"]), "\(a.stderr)")
        #expect(b.waitForEvent(.historyDropped, ["checkpoint": id, "events": "12"]), "\(b.stderr)")
        #expect(try history(a)["stage"] as? String == "dropped")
        #expect(try ReplicaStatus.of(temp.url("a")).event_count == 0)

        let c = try Daemon.start(data: temp.url("c"), peers: [a.address], logLevel: "info")
        #expect(c.waitForEvent(.checkpointStarted, ["checkpoint": id, "entities": "12"]), "\(c.stderr)")
        try temp.peerdOK(["item", "create", "washers", "9"], "b")
        let statuses = try Convergence.wait([temp.url("a"), temp.url("b"), temp.url("c")])
        #expect(statuses[2].event_count == 1, "C holds only the event after the checkpoint")
        let checkpoint = try #require(try json(c, "/status")["checkpoint"] as? [String: Any])
        #expect(checkpoint["id"] as? String == id)
        #expect(checkpoint["history_held"] as? Bool == false)
        #expect(try Peek.log(temp.url("c")).projections(Item.self).count == 13)
        #expect(try temp.peerdOK(["check", "--refold"], "a").hasPrefix("ok:"))
        _ = (a, b, c)
    }

    @Test("a member away blocks the drop and /status names it with how long; once retired, the history goes")
    func blockedUntilRetired() throws {
        try temp.cluster("a", ["b"])
        for index in 0..<5 { try temp.peerdOK(["item", "create", "part-\(index)", "1"], "a") }
        let a = try Daemon.start(data: temp.url("a"), logLevel: "info", extra: ["--keep-history", "0d"])
        let b = try Daemon.start(data: temp.url("b"), peers: [a.address], logLevel: "info")
        _ = try Convergence.wait([temp.url("a"), temp.url("b")])
        let bID = try ReplicaStatus.of(temp.url("b")).replica_id
        #expect(try b.stop() == 0)
        let id = try #require(try jsonObject(try temp.peerdOK(["checkpoint", "make", "--json"], "a"))["id"] as? String)
        let blocked = try history(a)
        #expect(blocked["stage"] as? String == "blocked", "\(blocked)")
        #expect(blocked["checkpoint"] as? String == id)
        let blockers = blocked["blockers"] as? [[String: Any]] ?? []
        #expect(blockers.map { $0["replica_id"] as? String } == [bID])
        #expect((blockers.first?["blocked_ms"] as? Int64 ?? -1) >= 0)
        #expect(blocked["acknowledged"] as? [String] == [try ReplicaStatus.of(temp.url("a")).replica_id])
        #expect(try ReplicaStatus.of(temp.url("a")).event_count == 5)

        let retired = try temp.peerdOK(["retire", "--replica", bID], "a")
        #expect(retired.hasPrefix("retired \(bID)"), "\(retired)")
        #expect(a.waitForEvent(.historyDropped, ["checkpoint": id, "events": "5"]), "\(a.stderr)")
        #expect(try history(a)["stage"] as? String == "dropped")
    }

    @Test("with the default retention nothing is dropped, and --start-from replay takes the whole history")
    func defaultsKeepEverything() throws {
        try temp.cluster("a", ["c"])
        for index in 0..<4 { try temp.peerdOK(["item", "create", "part-\(index)", "1"], "a") }
        let a = try Daemon.start(data: temp.url("a"), logLevel: "info")
        try temp.peerdOK(["checkpoint", "make"], "a")
        let c = try Daemon.start(
            data: temp.url("c"), peers: [a.address], logLevel: "info", extra: ["--start-from", "replay"])
        let statuses = try Convergence.wait([temp.url("a"), temp.url("c")])
        #expect(statuses.map(\.event_count) == [4, 4])
        #expect(c.events(.checkpointStarted).isEmpty)
        #expect(c.waitForEvent(.checkpointTaken), "C holds the events, so it recomputes A's checkpoint: \(c.stderr)")
        #expect(try history(a)["stage"] as? String == "off")
        #expect(try history(a)["retention"] as? String == "all")
        let bad = try Executables.peerd(["run", "--keep-history", "forever"], data: temp.url("c"))
        #expect(bad.status == 78 && bad.stderr.contains("keep-history"), "\(bad.stderr)")
    }

    @Test(
        "a device nobody running had met, behind history everyone dropped, moves onto the checkpoint and keeps its own edit"
    )
    func aStrangerBehindTheFloorMovesOntoTheCheckpoint() throws {
        try temp.cluster("a", ["b", "d"])
        for index in 0..<12 { try temp.peerdOK(["item", "create", "part-\(index)", "\(index)"], "a") }
        // d writes offline: a and b never hear of it before they drop the history.
        try temp.peerdOK(["item", "create", "written offline", "3"], "d")
        let keep = ["--keep-history", "0d"]
        let a = try Daemon.start(data: temp.url("a"), logLevel: "info", extra: keep)
        let b = try Daemon.start(data: temp.url("b"), peers: [a.address], logLevel: "info", extra: keep)
        _ = try Convergence.wait([temp.url("a"), temp.url("b")])
        let id = try #require(try jsonObject(try temp.peerdOK(["checkpoint", "make", "--json"], "a"))["id"] as? String)
        #expect(a.waitForEvent(.historyDropped, ["checkpoint": id]), "\(a.stderr)")
        #expect(b.waitForEvent(.historyDropped, ["checkpoint": id]), "\(b.stderr)")
        let d = try Daemon.start(data: temp.url("d"), peers: [a.address], logLevel: "info")
        #expect(d.waitForEvent(.checkpointRebased, ["checkpoint": id]), "\(d.stderr)")
        let statuses = try Convergence.wait([temp.url("a"), temp.url("b"), temp.url("d")])
        #expect(statuses.map(\.event_count) == [1, 1, 1], "each holds only d's edit after the checkpoint")
        #expect(try Peek.log(temp.url("d")).projections(Item.self).count == 13)
        let checkpoint = try #require(try json(d, "/status")["checkpoint"] as? [String: Any])
        #expect(checkpoint["id"] as? String == id && checkpoint["history_floor"] as? String == id)
        #expect(try temp.peerdOK(["check", "--refold"], "d").hasPrefix("ok:"))
        _ = (a, b, d)
    }

    @Test("a phone that asks GET /events?from=checkpoint is served the checkpoint's state, then the events after it")
    func aPhoneStartsFromTheCheckpointOnRequest() throws {
        try temp.cluster("a", [])
        for index in 0..<6 { try temp.peerdOK(["item", "create", "part-\(index)", "\(index)"], "a") }
        try temp.peerdOK(["checkpoint", "make"], "a")
        let a = try Daemon.start(data: temp.url("a"), logLevel: "info")
        try temp.peerdOK(["item", "create", "after the checkpoint", "1"], "a")
        let whole = try jsonObject(try a.api!.request("GET", "/events?after=0").text)
        #expect((whole["events"] as? [[String: Any]])?.count == 7)
        let started = try jsonObject(try a.api!.request("GET", "/events?after=0&from=checkpoint").text)
        let state = try #require(started["events"] as? [[String: Any]])
        #expect(state.count == 6 && state.allSatisfy { $0["server_offset"] as? Int == 6 }, "\(state)")
        #expect(started["next_offset"] as? Int == 6)
        let tail = try jsonObject(try a.api!.request("GET", "/events?after=6&from=checkpoint").text)
        #expect((tail["events"] as? [[String: Any]])?.count == 1)
        let bad = try a.api!.request("GET", "/events?after=0&from=yesterday")
        #expect(bad.status == 400 && bad.text.contains("from"), "\(bad.text)")
    }
}
