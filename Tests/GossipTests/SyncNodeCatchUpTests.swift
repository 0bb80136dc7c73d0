import Gossip
import Replica
import SyncProtocol
import Testing

@Suite struct SyncNodeCatchUpTests {
    @Test func aNodeLogsItsCatchUpWithRateAndOnceWhenCaughtUp() throws {
        let mesh = try NodeMesh(["a", "b"]) {
            $0.session.batchEvents = 5
            $0.session.window = 1
        }
        try mesh.append(30, on: "a")
        mesh.msPerMessage = 200
        mesh.connect("a", "b")
        #expect(mesh["b"].node.cursor == mesh["a"].node.cursor)
        let progress = mesh.records(.catchingUp, of: "b")
        #expect(!progress.isEmpty)
        for record in progress {
            let fields = Dictionary(uniqueKeysWithValues: record.fields)
            #expect(fields["peer"] == "a")
            #expect(Int(fields["received"] ?? "") ?? 0 > 0 && Int(fields["remaining"] ?? "") ?? 0 > 0)
            #expect(fields["rate"]?.hasSuffix("/s") == true)
        }
        let done = mesh.records(.caughtUp, of: "b")
        #expect(done.count == 1)
        #expect(done.first.map { Dictionary(uniqueKeysWithValues: $0.fields)["received"] } == "30")
        #expect(mesh.records(.caughtUp, of: "a").isEmpty, "a had nothing to receive")
    }
}
