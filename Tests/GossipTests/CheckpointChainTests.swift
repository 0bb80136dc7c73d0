import Foundation
import Gossip
import Replica
import SyncProtocol
import Testing

/// Chains of checkpoints and history floors between real nodes over real
/// SQLite files (docs/protocol.md "Checkpoints over the wire", "History
/// floors"): a replica that missed checkpoints takes them in order, and one
/// that lacks history every peer dropped moves onto their checkpoint.
@Suite struct CheckpointChainTests {
    private func mesh(_ names: [String], keep: HistoryRetention = .everything) throws -> NodeMesh {
        try NodeMesh(names, signed: true) { $0.retention = keep }
    }

    @Test func aReplicaThatMissedTwoCheckpointsTakesThemInOrderOnceItHoldsTheirEvents() throws {
        let mesh = try mesh(["a", "b", "c"])
        try mesh.append(20, on: "a")
        mesh.connect("a", "b")
        let first = try mesh.makeCheckpoint(on: "a")
        try mesh.append(10, on: "a")
        let second = try mesh.makeCheckpoint(on: "a")
        #expect(try mesh["b"].log.checkpoint()?.content.id == second.content.id)
        // c is shown the chain before it holds a single covered event.
        mesh.connect("c", "b")
        #expect(mesh["c"].node.refusedCheckpoints.isEmpty)
        #expect(
            mesh.records(.checkpointTaken, of: "c").map { $0["checkpoint"] }
                == [Hex.string(first.content.id), Hex.string(second.content.id)])
        #expect(try mesh["c"].log.checkpoint()?.content.id == second.content.id)
        #expect(try mesh["c"].log.checkpoint()?.historyHeld == true)
    }

    @Test func aReplicaThatLacksHistoryEveryPeerDroppedMovesOntoTheirCheckpointAndKeepsItsOwnEvents() throws {
        let mesh = try mesh(["a", "b", "c"], keep: .days(0))
        try mesh.append(40, on: "a")
        mesh.connect("a", "b")
        let signed = try mesh.makeCheckpoint(on: "a")
        mesh.tick()
        // a and b know no other member: both acknowledged, both dropped the history.
        #expect(try mesh["a"].log.eventCount() == 0 && mesh["b"].log.eventCount() == 0)
        // c never met them, and wrote on its own meanwhile.
        try mesh.append(5, on: "c")
        mesh.connect("c", "a")
        #expect(mesh.records(.checkpointRebasing, of: "c").first?["lacking"] == "40")
        #expect(mesh.records(.checkpointRebased, of: "c").count == 1)
        let held = try #require(try mesh["c"].log.checkpoint())
        #expect(held.content.id == signed.content.id && held.historyDropped)
        #expect(try mesh["c"].log.eventCount() == 5)
        mesh.tick()
        #expect(try mesh["a"].log.eventCount() == 5)  // c's own events reached a
        #expect(try mesh["c"].log.stateHash() == mesh["a"].log.stateHash())
        #expect(try mesh["b"].log.stateHash() == mesh["a"].log.stateHash())
        #expect(mesh["a"].node.historyCollection.acknowledged.contains("c"))
        #expect(mesh["c"].node.refusedCheckpoints.isEmpty)
    }
}
