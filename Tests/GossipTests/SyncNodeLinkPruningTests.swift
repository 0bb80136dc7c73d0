import Gossip
import Replica
import SyncProtocol
import Testing

/// Link pruning between real nodes: in a mesh of three, each node gets
/// another's events from their origin, and the third node's forwarded
/// copies stop after the first.
@Suite struct SyncNodeLinkPruningTests {
    func prunes(_ mesh: NodeMesh, by name: String) -> [[String]] {
        (mesh.sent[name] ?? []).compactMap { message in
            if case .prune(let origins) = message { return origins }
            return nil
        }
    }

    @Test func aThreeNodeMeshReceivesEachLiveEventOnceAfterThePrune() throws {
        let mesh = try NodeMesh(["a", "b", "c"])
        mesh.connect([("a", "b"), ("a", "c"), ("b", "c")])
        try mesh.append(1, on: "a")
        // c forwarded a's event to b and b to c: each prunes a on the other.
        #expect(prunes(mesh, by: "b") == [["a"]])
        #expect(prunes(mesh, by: "c") == [["a"]])
        let before = (mesh["b"].node.statistics, mesh["c"].node.statistics)
        for _ in 0..<20 { try mesh.append(1, on: "a") }
        for (now, then) in [(mesh["b"].node.statistics, before.0), (mesh["c"].node.statistics, before.1)] {
            #expect(now.eventsStored - then.eventsStored == 20)
            #expect(now.eventsReceived - then.eventsReceived == 20)
        }
        #expect(mesh["b"].node.cursor == mesh["a"].node.cursor && mesh["c"].node.cursor == mesh["a"].node.cursor)
    }

    @Test func withoutPruningEveryForwardedCopyArrives() throws {
        let mesh = try NodeMesh(["a", "b", "c"]) { $0.session.prunesLinks = false }
        mesh.connect([("a", "b"), ("a", "c"), ("b", "c")])
        for _ in 0..<10 { try mesh.append(1, on: "a") }
        #expect(prunes(mesh, by: "b").isEmpty && prunes(mesh, by: "c").isEmpty)
        #expect(mesh["b"].node.statistics.eventsStored == 10)
        #expect(mesh["b"].node.statistics.eventsReceived == 20)
    }
}
