import Foundation
import Gossip
import Replica
import SyncProtocol
import TestSupport
import Testing

@Suite struct SyncNodeStateTests {
    @Test func eachSideSendsItsStateAfterTheCursorExchangeAndOnlyAgainAfterAChange() throws {
        let mesh = try NodeMesh(["a", "b"])
        try mesh.append(2, on: "a")
        mesh.connect("a", "b")
        #expect(mesh.statesSent(by: "a").isEmpty, "nothing hashed before the first round")
        mesh.tick()
        mesh.now += 1_000
        mesh.tick()
        let hashA = try mesh["a"].log.stateHash()
        #expect(mesh.statesSent(by: "a").map(\.hash.hex) == [hashA])
        #expect(mesh.statesSent(by: "b").map(\.eventCount) == [2])
        for _ in 0..<3 {
            mesh.now += 1_000
            mesh.tick()
        }
        #expect(mesh.statesSent(by: "a").count == 1 && mesh.statesSent(by: "b").count == 1)

        try mesh.append(1, on: "b")
        mesh.now += 1_000
        mesh.tick()
        mesh.now += 1_000
        mesh.tick()
        #expect(mesh.statesSent(by: "a").map(\.eventCount) == [2, 3])
        #expect(mesh.statesSent(by: "b").map(\.eventCount) == [2, 3])
    }

    @Test func thePeerTableShowsTheHashThePeerReportedAndWhetherTheyAreInSync() throws {
        let mesh = try NodeMesh(["a", "b"])
        try mesh.append(3, on: "a")
        mesh.connect("a", "b")
        mesh.tick()
        mesh.now += 1_000
        mesh.tick()
        let row = try #require(mesh["b"].node.peerTable(now: mesh.now).first { $0.replicaID == "a" })
        #expect(row.stateHash == (try mesh["a"].log.stateHash()))
        #expect(row.eventCount == 3)
        #expect(row.inSync && row.stateIsCurrent)
        let local = try #require(mesh["b"].node.localState)
        #expect(local.summary.hash.hex == row.stateHash && local.cursor == mesh["b"].node.cursor)
    }

    @Test func aPeerThatLacksEventsIsNotInSync() throws {
        let mesh = try NodeMesh(["a", "b"]) { $0.session.livePush = false }
        mesh.connect("a", "b")
        mesh.tick()
        try mesh["a"].log.append(NewEvent(item: "late", .created(name: "x", quantity: 1)))
        let cursor = try mesh["a"].log.cursor()
        _ = mesh["a"].node.localChanged(cursor: cursor, now: mesh.now)
        let row = try #require(mesh["a"].node.peerTable(now: mesh.now).first { $0.replicaID == "b" })
        #expect(!row.inSync && row.eventsToSend == 1)
    }

    @Test func aReplicaThatKeepsTakingWritesIsInSyncWithAPeerThatHoldsItsEvents() throws {
        let mesh = try NodeMesh(["a", "b"])
        mesh.connect("a", "b")
        var verified: [Int64] = []
        for step in 0..<60 {
            // A write every 30 or 90 ms: the cursor never stands still for a whole round.
            try mesh.append(1, on: "a")
            mesh.now += step % 3 == 0 ? 90 : 30
            mesh.tick()
            let row = try #require(mesh["b"].node.peerTable(now: mesh.now).first { $0.replicaID == "a" })
            #expect(!row.diverged)
            if row.inSync && row.stateVerified { verified.append(mesh.now) }
        }
        // Verified again and again while the writes went on, never by a round of quiet.
        #expect(verified.count >= 5, "\(verified)")
        // At sampled cursors in a lull, never closer than the gap: at most 3 s / 200 ms of them.
        let hashes = mesh.statesSent(by: "a").count
        let gap = mesh["a"].node.configuration.stateHashGapMs
        #expect(hashes >= 2 && hashes <= Int(3_000 / gap) + 1, "a hashed \(hashes) times in 3 s")
        let check = try #require(mesh["a"].node.sessions.values.first?.stateCheck)
        #expect(check.matched && check.cursor.eventCount > 1)
    }

    @Test func aStateThatDiffersAtOneCursorIsADivergence() throws {
        let mesh = try NodeMesh(["a", "b"])
        // One origin's seq 1 is another event on each side (a restored backup that wrote again).
        for (name, title) in [("a", "one"), ("b", "two")] {
            try mesh.ingest(
                [
                    Event(
                        eventID: UUID(), feed: FeedID(replicaID: "x"), seq: 1, timeMs: 1, entityType: Item.entityType,
                        entityID: "i", payload: ItemEvent.created(name: title, quantity: 1).payload)
                ], on: name)
        }
        mesh.connect("a", "b")
        mesh.now += 1_000
        mesh.tick()
        let row = try #require(mesh["a"].node.peerTable(now: mesh.now).first { $0.replicaID == "b" })
        #expect(row.diverged && !row.inSync && !row.stateVerified)
        #expect(mesh["a"].node.sessions.values.first?.stateCheck?.matched == false)
    }

    @Test func theHashIsNotComputedWithoutASession() throws {
        let mesh = try NodeMesh(["a"])
        try mesh.append(1, on: "a")
        mesh.tick()
        #expect(mesh["a"].node.localState == nil)
    }
}

/// A catch-up leaves projection rows pending in memory (docs/storage.md);
/// the node writes them once a round has been quiet, and when it stops.
@Suite struct SyncNodePendingProjectionTests {
    /// A mesh where B has caught up 600 events from A in batches large
    /// enough to leave B's projection rows pending.
    private func caughtUpMesh() throws -> NodeMesh {
        let mesh = try NodeMesh(["a", "b"])
        try mesh["a"].log.append(
            (0..<600).map { NewEvent(item: "i\($0 % 40)", .quantityChanged(quantity: Int64($0))) })
        try mesh.localChanged(on: "a")
        mesh.connect("a", "b")
        #expect(try mesh["b"].log.eventCount() == 600)
        #expect(mesh["b"].log.hasPendingProjections)
        // Reads fold the pending tail: B already shows A's state.
        #expect(try mesh["b"].log.stateHash() == (try mesh["a"].log.stateHash()))
        return mesh
    }

    @Test func rowsAreWrittenOnceARoundHasBeenQuiet() throws {
        let mesh = try caughtUpMesh()
        // The round right after the catch-up saw the cursor move: not quiet yet.
        mesh.now += 1_000
        mesh.tick()
        #expect(mesh["b"].log.hasPendingProjections)
        mesh.now += 1_000
        mesh.tick()
        #expect(!mesh["b"].log.hasPendingProjections)
        #expect(try mesh["b"].log.stateHash() == (try mesh["a"].log.stateHash()))
    }

    @Test func aNodeStartedOnAFileWhoseRowsLagWritesThemOnceARoundIsQuiet() throws {
        // What a `kill -9` during a catch-up leaves: events stored, projection rows behind.
        let directory = try TemporaryDirectory()
        let path = directory.path("restarted.db")
        do {
            let log = try EventLog.create(at: path, replicaID: "restarted")
            try log.ingest(
                (1...600).map { seq in
                    Event(
                        eventID: UUID(), feed: FeedID(replicaID: "origin"), seq: UInt64(seq), timeMs: Int64(seq),
                        entityType: Item.entityType, entityID: "i\(seq % 40)",
                        payload: ItemEvent.quantityChanged(quantity: Int64(seq)).payload)
                })
            #expect(log.hasPendingProjections)
        }
        let log = try EventLog.open(at: path)
        var node = SyncNode(
            configuration: .init(hello: Hello(replicaID: "restarted", listenPort: 0)), cursor: try log.cursor())
        #expect(try EventLog.open(at: path).hasPendingProjections)
        let interval = node.configuration.antiEntropyIntervalMs
        for round in 0..<3 {
            let now = Milliseconds(round) * interval
            _ = DirectStorage.carryOut(node.tick(now: now), node: &node, log: log, now: now)
        }
        #expect(!(try EventLog.open(at: path).hasPendingProjections))
    }

    @Test func rowsAreWrittenWhenTheNodeStops() throws {
        let mesh = try caughtUpMesh()
        let now = mesh.now
        _ = mesh["b"].input({ $0.shutdown(reason: "test", now: now) }, now: now)
        #expect(!mesh["b"].log.hasPendingProjections)
    }
}
