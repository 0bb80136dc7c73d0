import SyncProtocol
import Testing

/// What a replica in `auto` logs as its relay comes and goes: a line for
/// each move between the mesh and the hub, and none claiming a move that a
/// relay back in time spared.
@Suite struct SyncNodeTopologyLogTests {
    @Test func aRelayBackInTimeIsLoggedAsBackNotAsAChangeOfTopology() throws {
        let mesh = try NodeMesh(["a", "r"]) { configuration in
            if configuration.hello.replicaID == "r" { configuration.hello.role = .relay }
        }
        func changes() -> [String] {
            mesh.records(.topologyChanged, of: "a").compactMap { $0.fields.first { $0.0 == "topology" }?.1 }
        }
        mesh.connect("a", "r")
        #expect(changes() == ["hub"])

        mesh.disconnect("a", "r")
        #expect(mesh.records(.relayGone, of: "a").count == 1)
        mesh.now += 1_000
        mesh.connect("a", "r")
        #expect(mesh.records(.relayBack, of: "a").count == 1)
        #expect(changes() == ["hub"], "the node never left the hub")

        mesh.disconnect("a", "r")
        mesh.now += 3_000
        mesh.tick()
        #expect(changes() == ["hub", "mesh"])
        #expect(mesh.records(.relayGone, of: "a").count == 2)
    }

    @Test func aReplicaAddressNotDialedInTheHubShowsNoRedial() throws {
        let mesh = try NodeMesh(["a", "b", "r"]) { configuration in
            if configuration.hello.replicaID == "r" { configuration.hello.role = .relay }
        }
        mesh.connect("a", "b")
        mesh.connect("a", "r")  // The hub: a closes its connection to the replica b.
        let row = try #require(mesh["a"].node.peerTable(now: mesh.now).first { $0.replicaID == "b" })
        #expect(row.state == .waiting)
        #expect(row.nextDialInMs == nil, "b is not dialed while a syncs through r")
    }
}
