import Foundation
import Gossip
import Replica
import SyncProtocol
import Testing

/// Checkpoints between real nodes over real SQLite files (docs/protocol.md
/// "Checkpoints over the wire"): taken where the events are held, refused
/// where they do not match, started from by an empty log, and the history
/// under them dropped only once every member acknowledged.
@Suite struct CheckpointGossipTests {
    /// A signed open-cluster mesh; `fresh` nodes start empty and may start from a checkpoint.
    private func mesh(_ names: [String], fresh: Set<String> = [], keep: HistoryRetention = .everything) throws
        -> NodeMesh
    {
        try NodeMesh(names, signed: true) { configuration in
            configuration.startsFromCheckpoints = fresh.contains(configuration.hello.replicaID)
            configuration.retention = keep
        }
    }

    private func heldID(_ member: NodeMesh.Member) throws -> String? {
        try member.log.checkpoint().map { Hex.string($0.content.id) }
    }

    @Test func aCheckpointIsRecomputedAndTakenByEveryReplicaThatHoldsTheEventsAndAcknowledgedByAll() throws {
        let mesh = try mesh(["a", "b", "c"])
        try mesh.append(40, on: "a")
        try mesh.append(30, on: "b")
        mesh.connect([("a", "b"), ("b", "c")])
        #expect(try mesh["c"].log.eventCount() == 70)
        let signed = try mesh.makeCheckpoint(on: "a")
        let id = Hex.string(signed.content.id)
        #expect(try heldID(mesh["b"]) == id)
        #expect(try heldID(mesh["c"]) == id)  // from b, which passed it on
        #expect(mesh.records(.checkpointTaken, of: "c").count == 1)
        for name in ["a", "b", "c"] {
            #expect(mesh[name].node.historyCollection.acknowledged == ["a", "b", "c"])
            #expect(mesh[name].node.historyCollection.stage == .off)  // retention keeps everything
        }
        // Each replica keeps the acknowledgements: a restarted node starts with them.
        let kept = try SyncNode.Kept(log: mesh["c"].log)
        #expect(Set(kept.checkpointAcks.map(\.replicaID)) == ["a", "b", "c"])
        #expect(kept.checkpoint?.statement == signed)
    }

    @Test func aCheckpointWithAWrongStateIsReportedByEveryReplicaThatHoldsTheEventsNamingItsSigner() throws {
        let mesh = try mesh(["a", "b", "c"])
        try mesh.append(25, on: "a")
        mesh.connect([("a", "b"), ("b", "c")])
        var content = try mesh["a"].log.makeCheckpoint()
        content.stateHash = [UInt8](repeating: 7, count: 32)
        let forged = SignedCheckpoint.sign(content, by: NodeMesh.identityKey(of: "a"), as: .maker)
        // b is shown it by a (as if a had taken it) and c by b: both hold the events.
        mesh.input("b") { $0.checkpointGiven(forged, now: 0) }
        mesh.input("c") { $0.checkpointGiven(forged, now: 0) }
        for name in ["b", "c"] {
            let refused = try #require(mesh[name].node.refusedCheckpoints.first)
            #expect(refused.cause == .mismatch)
            #expect(refused.madeBy == "a")
            #expect(refused.signerKey == Hex.string(NodeMesh.identityKey(of: "a").publicKey))
            #expect(refused.detail.contains("state hash"))
            let record = try #require(mesh.records(.checkpointRefused, of: name).first)
            #expect(record.level == .error)
            #expect(try mesh[name].log.checkpoint() == nil)
        }
        // One signed by a key nobody trusts is refused without being recomputed.
        let stranger = SignedCheckpoint.sign(
            try mesh["a"].log.makeCheckpoint(), by: SigningKey.generate(), as: .maker)
        mesh.input("b") { $0.checkpointGiven(stranger, now: 0) }
        #expect(mesh["b"].node.refusedCheckpoints.contains { $0.cause == .untrusted })
        #expect(try mesh["b"].log.checkpoint() == nil)
    }

    @Test func anEmptyReplicaStartsFromTheCheckpointPlusTheTailAndKeepsUp() throws {
        let mesh = try mesh(["a", "b", "d"], fresh: ["d"])
        try mesh.append(300, on: "a")
        mesh.connect("a", "b")
        try mesh.makeCheckpoint(on: "a")
        try mesh.append(20, on: "a")  // the tail
        mesh.connect("d", "a")
        let held = try #require(try mesh["d"].log.checkpoint())
        #expect(!held.historyHeld)
        #expect(try mesh["d"].log.eventCount() == 20)  // only the tail travelled
        #expect(try mesh["d"].log.stateHash() == mesh["a"].log.stateHash())
        #expect(mesh.records(.checkpointStarted, of: "d").count == 1)
        // Live writes after the start arrive as usual.
        try mesh.append(3, on: "a")
        #expect(try mesh["d"].log.stateHash() == mesh["a"].log.stateHash())
        // d acknowledged; a and b know it.
        #expect(mesh["a"].node.historyCollection.acknowledged.contains("d"))
    }

    @Test func anEmptyReplicaWhosePeersAllAnsweredWithoutAnOfferReplaysTheHistoryAtOnce() throws {
        let mesh = try mesh(["a", "d", "e"], fresh: ["d", "e"])
        try mesh.append(12, on: "a")
        mesh.connect("d", "a")
        #expect(try mesh["d"].log.eventCount() == 12)
        #expect(try mesh["d"].log.checkpoint() == nil)
        // Two empty replicas, each waiting for an offer: each says it has none, and both go on at once.
        let pair = try self.mesh(["x", "y"], fresh: ["x", "y"])
        pair.connect("x", "y")
        #expect(!pair["x"].node.isStartingFromCheckpoint && !pair["y"].node.isStartingFromCheckpoint)
        mesh.connect("e", "d")
        #expect(try mesh["e"].log.eventCount() == 12)
    }

    @Test func anEmptyReplicaWaitsForAPeerThatNeverAnswersOnlyUntilTheWaitIsOver() {
        var configuration = SyncNode.Configuration(hello: Hello(replicaID: "d", listenPort: 4100))
        configuration.startsFromCheckpoints = true
        var node = SyncNode(configuration: configuration, cursor: VectorCursor())
        let sentCursor = { (effects: [SyncNode.Effect]) in
            effects.contains { if case .send(_, .cursor) = $0 { true } else { false } }
        }
        #expect(!sentCursor(node.connectionOpened(1, dialed: nil, now: 0)))
        // An older peer, say: its hello, and nothing about checkpoints.
        #expect(!sentCursor(node.received(.hello(Hello(replicaID: "a", listenPort: 4100)), on: 1, now: 10)))
        #expect(node.isStartingFromCheckpoint)
        #expect(node.nextDeadline <= 10 + configuration.checkpointOfferWaitMs)
        #expect(!sentCursor(node.tick(now: 10 + configuration.checkpointOfferWaitMs - 1)))
        #expect(sentCursor(node.tick(now: 10 + configuration.checkpointOfferWaitMs)))
        #expect(!node.isStartingFromCheckpoint)
    }

    @Test func historyIsDroppedOnlyOnceEveryMemberAcknowledgedAndAMemberAwayIsNamedUntilRetired() throws {
        let mesh = try mesh(["a", "b", "c"], keep: .days(0))
        try mesh.append(50, on: "a")
        mesh.connect([("a", "b"), ("b", "c")])
        mesh.disconnect("b", "c")
        try mesh.append(10, on: "a")  // c lacks these: it must still get them
        try mesh.makeCheckpoint(on: "a")
        let blocked = mesh["a"].node.historyCollection
        #expect(blocked.stage == .blocked)
        #expect(blocked.blockers.map(\.replica) == ["c"])
        #expect(try mesh["a"].log.eventCount() == 60)
        // c comes back: it gets the 10 events, takes the checkpoint, acknowledges; then history goes.
        mesh.connect("c", "b")
        #expect(try heldID(mesh["c"]) == heldID(mesh["a"]))
        mesh.tick()
        for name in ["a", "b", "c"] {
            #expect(mesh[name].node.historyCollection.stage == .dropped)
            #expect(try mesh[name].log.eventCount() == 0)
            #expect(try mesh[name].log.checkpoint()?.historyHeld == false)
        }
        #expect(mesh.records(.historyDropped, of: "a").count == 1)
        #expect(try mesh["a"].log.stateHash() == mesh["c"].log.stateHash())
    }

    @Test func aRetiredMemberNoLongerHoldsTheHistory() throws {
        let mesh = try mesh(["a", "b", "c"], keep: .days(0))
        try mesh.append(20, on: "a")
        mesh.connect([("a", "b"), ("b", "c")])
        mesh.disconnect("b", "c")
        try mesh.makeCheckpoint(on: "a")
        mesh.tick()
        #expect(mesh["a"].node.historyCollection.blockers.map(\.replica) == ["c"])
        #expect(try mesh["a"].log.eventCount() == 20)
        mesh.input("a") { $0.retire("c", now: 0) }
        #expect(mesh["a"].node.historyCollection.stage == .dropped)
        #expect(try mesh["a"].log.eventCount() == 0)
        // b still waits for c: retiring is each open-cluster replica's own decision.
        #expect(mesh["b"].node.historyCollection.stage == .blocked)
    }

    @Test func aLateEditForAnItemDeletedBeforeTheCheckpointDoesNotResurrectIt() throws {
        let mesh = try mesh(["a", "b"], keep: .days(0))
        try mesh["a"].log.append(NewEvent(item: "x", .created(name: "crate", quantity: 1)))
        try mesh["a"].log.append(NewEvent(item: "x", .deleted))
        try mesh.localChanged(on: "a")
        mesh.connect("a", "b")
        try mesh.makeCheckpoint(on: "a")
        mesh.tick()
        #expect(try mesh["a"].log.eventCount() == 0)  // dropped: both acknowledged
        // A device whose clock is a year behind edits x after the drop: its
        // event sorts before the deletion, and still x stays deleted.
        mesh["b"].wallClock.set(1_670_000_000_000)
        try mesh["b"].log.append(NewEvent(item: "x", .renamed(name: "back")))
        try mesh.localChanged(on: "b")
        for name in ["a", "b"] {
            #expect(try mesh[name].log.projection(Item.self, id: "x").map(\.deleted) ?? true)
        }
        #expect(try mesh["a"].log.stateHash() == mesh["b"].log.stateHash())
    }
}
