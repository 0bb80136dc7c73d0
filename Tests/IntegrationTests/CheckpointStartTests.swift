import DaemonClient
import Foundation
import SyncProtocol
import TestSupport
import Testing

@testable import Replica

/// `peerd checkpoint make|export|start` (docs/operations.md "Checkpoints"):
/// a new device starts from a file of the state and syncs only what follows.
@Suite("checkpoint start")
struct CheckpointStartTests {
    let temp: TemporaryDirectory
    init() throws { temp = try TemporaryDirectory() }

    /// A, with three items (one deleted), a checkpoint taken and exported.
    private func exportFromA() throws -> String {
        try temp.cluster("a", ["b"])
        for name in ["bolts", "nuts", "gears"] { try temp.peerdOK(["item", "create", name, "4"], "a") }
        let gears = try #require(try Peek.log(temp.url("a")).projections(Item.self).first { $0.name == "gears" })
        try temp.peerdOK(["item", "delete", gears.id], "a")
        let made = try temp.peerdOK(["checkpoint", "make"], "a")
        #expect(made.contains("covers 4 events of 1 feeds, 3 entities"), "\(made)")
        let file = temp.path("a.checkpoint")
        #expect(try temp.peerdOK(["checkpoint", "export", file], "a").contains("to \(file)"))
        return file
    }

    @Test("B starts from A's file with A's state and none of its events, then syncs only what A writes next")
    func startAndSyncTheTail() throws {
        let file = try exportFromA()
        let started = try temp.peerdOK(["checkpoint", "start", file], "b")
        #expect(started.contains("this replica holds none of the events it covers"), "\(started)")
        #expect(try ReplicaStatus.of(temp.url("b")).state_hash == ReplicaStatus.of(temp.url("a")).state_hash)
        #expect(try ReplicaStatus.of(temp.url("b")).event_count == 0)

        let a = try Daemon.start(data: temp.url("a"), logLevel: "info")
        let b = try Daemon.start(data: temp.url("b"), peers: [a.address], logLevel: "info")
        try temp.peerdOK(["item", "create", "washers", "9"], "a")
        let statuses = try Convergence.wait([temp.url("a"), temp.url("b")])
        #expect(statuses[1].event_count == 1, "B received the one event after the checkpoint")
        #expect(
            try Peek.log(temp.url("b")).projections(Item.self).map(\.name).sorted() == [
                "bolts", "gears", "nuts", "washers",
            ])
        let json = try temp.peerdOK(["checkpoint", "show", "--json"], "b")
        #expect(json.contains(#""history_held":false"#) && json.contains(#""signer":"maker""#), "\(json)")
        #expect(try temp.peerdOK(["check", "--refold"], "b").hasPrefix("ok: 1 events in 1 feeds"))
        _ = (a, b)
    }

    @Test("a file whose states were changed, or a replica that holds events, is refused and nothing is taken")
    func refusals() throws {
        let file = try exportFromA()
        var bytes = try #require(FileManager.default.contents(atPath: file))
        let at = try #require(bytes.range(of: Data("bolts".utf8)))
        bytes.replaceSubrange(at, with: Data("bults".utf8))
        let forged = temp.path("forged.checkpoint")
        try bytes.write(to: URL(fileURLWithPath: forged))
        let refused = try Executables.peerd(["checkpoint", "start", forged], data: temp.url("b"))
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("does not match the events it covers"), "\(refused.stderr)")
        #expect(try temp.peerdOK(["checkpoint", "show"], "b").hasPrefix("no checkpoint"))

        let full = try Executables.peerd(["checkpoint", "start", file], data: temp.url("a"))
        #expect(full.status == 1)
        #expect(full.stderr.contains("this log already holds events"), "\(full.stderr)")
    }

    @Test("C, which holds A's events, recomputes A's checkpoint and takes it; before it holds them it is refused")
    func takeOnAReplicaWithHistory() throws {
        let file = try exportFromA()
        try temp.peerdOK(["init", "--join", try temp.peerdOK(["cluster-code"], "a")], "c")
        let early = try Executables.peerd(["checkpoint", "take", file], data: temp.url("c"))
        #expect(early.status == 1 && early.stderr.contains("lacks 4 events it covers"), "\(early.stderr)")
        try temp.peerdOK(["export", temp.path("a.ndjson")], "a")
        try temp.peerdOK(["import", temp.path("a.ndjson")], "c")
        let taken = try temp.peerdOK(["checkpoint", "take", file], "c")
        #expect(taken.hasPrefix("took checkpoint"), "\(taken)")
        #expect(try temp.peerdOK(["checkpoint", "take", file], "c").hasPrefix("already holds"))
        #expect(try ReplicaStatus.of(temp.url("c")).state_hash == ReplicaStatus.of(temp.url("a")).state_hash)
        #expect(try temp.peerdOK(["checkpoint", "show", "--json"], "c").contains(#""history_held":true"#))
    }

    @Test(
        "in a cluster with an admin key, only the admin signs a checkpoint, and a file the admin did not sign is refused"
    )
    func certifiedCluster() throws {
        try temp.cluster("a", ["b"])
        let admin = temp.path("admin.key")
        #expect(try Executables.run("peerd", ["admin-key", "--out", admin]).status == 0)
        for dir in ["a", "b"] {
            let invite = try temp.peerdOK(
                [
                    "invite", "--admin-key", admin, "--for", try temp.peerdOK(["identity"], dir), "--read", "*",
                    "--write", "default",
                ], "a")
            try temp.peerdOK(["init", "--join", invite], dir)
        }
        try temp.peerdOK(["item", "create", "bolts", "4"], "a")
        let unsigned = try Executables.peerd(["checkpoint", "make"], data: temp.url("a"))
        #expect(unsigned.status == 1 && unsigned.stderr.contains("only that admin signs checkpoints"), "\(unsigned)")
        #expect(try temp.peerdOK(["checkpoint", "make", "--admin-key", admin], "a").contains("signed by the admin"))
        let file = temp.path("a.checkpoint")
        try temp.peerdOK(["checkpoint", "export", file], "a")
        #expect(try temp.peerdOK(["checkpoint", "start", file], "b").hasPrefix("started from checkpoint"))

        // A checkpoint its maker signed, as in an open cluster, does not count here.
        try temp.peerdOK(["init"], "open")
        try temp.peerdOK(["item", "create", "nuts", "1"], "open")
        try temp.peerdOK(["checkpoint", "make"], "open")
        let foreign = temp.path("open.checkpoint")
        try temp.peerdOK(["checkpoint", "export", foreign], "open")
        try temp.peerdOK(["init", "--join", try temp.peerdOK(["cluster-code"], "a")], "c")
        let invite = try temp.peerdOK(
            [
                "invite", "--admin-key", admin, "--for", try temp.peerdOK(["identity"], "c"), "--read", "*",
                "--write", "default",
            ], "a")
        try temp.peerdOK(["init", "--join", invite], "c")
        let refused = try Executables.peerd(["checkpoint", "start", foreign], data: temp.url("c"))
        #expect(
            refused.status == 1 && refused.stderr.contains("is not signed by this cluster's admin key"), "\(refused)")
    }
}
