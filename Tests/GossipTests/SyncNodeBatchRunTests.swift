import Gossip
import Replica
import SyncProtocol
import Testing

/// Event batches handed to a node together are stored in one transaction
/// and must come out exactly as if they had arrived one by one.
@Suite struct SyncNodeBatchRunTests {
    /// Every ack `name` sent, in order.
    func acks(_ mesh: NodeMesh, of name: String) -> [UInt64] {
        (mesh.sent[name] ?? []).compactMap { message in
            if case .ack(let batchID, _) = message { return batchID }
            return nil
        }
    }

    @Test func aRunOfBatchesIsStoredAndAcknowledgedLikeSingleBatches() throws {
        var outcomes: [(cursor: VectorCursor, hash: String, acks: [UInt64], events: Int64)] = []
        for runs in [false, true] {
            let mesh = try NodeMesh(["a", "b"]) {
                $0.session.batchEvents = 7
                $0.session.window = 4
            }
            try mesh.append(60, on: "a")
            mesh.deliversRuns = runs
            mesh.connect("a", "b")
            #expect(mesh["b"].node.cursor == mesh["a"].node.cursor, "runs: \(runs)")
            #expect(runs ? mesh.longestRun >= 4 : mesh.longestRun == 1)
            outcomes.append(
                (
                    mesh["b"].node.cursor, try mesh["b"].log.stateHash(), acks(mesh, of: "b"),
                    try mesh["b"].log.eventCount()
                ))
        }
        let (single, batched) = (outcomes[0], outcomes[1])
        #expect(batched.events == 60 && single.events == 60)
        #expect(batched.hash == single.hash && batched.cursor == single.cursor)
        // Every batch is acknowledged once, in order, whether stored alone or in a run.
        #expect(single.acks == Array(1...9))
        #expect(batched.acks == single.acks)
    }
}
