import Foundation
import TestSupport
import Testing

@testable import Replica

/// Dropping the history a checkpoint covers (docs/storage.md "Dropping
/// history") and what a thin client is served after it (docs/relay.md
/// "Checkpoints and thin clients").
@Suite("Dropped history")
struct DroppedHistoryTests {
    let directory: TemporaryDirectory
    let clock = ManualClock(1_000)

    init() throws { directory = try TemporaryDirectory() }

    private func makeLog(_ name: String) throws -> EventLog {
        try EventLog.create(at: directory.path("\(name).db"), replicaID: name, options: .testing(clock: clock))
    }

    private let bolts = UUID().uuidString.lowercased()
    private let nuts = UUID().uuidString.lowercased()

    /// A log with bolts (noted) and nuts (deleted), checkpointed at its cursor.
    private func checkpointed() throws -> EventLog {
        let log = try makeLog("a")
        try log.append(NewEvent(item: bolts, .created(name: "Bolts", quantity: 5)))
        try log.append(NewEvent(item: bolts, .noteChanged(note: "aisle 4")))
        try log.append(NewEvent(item: nuts, .created(name: "Nuts", quantity: 2)))
        try log.append(NewEvent(item: nuts, .deleted))
        let content = try log.makeCheckpoint()
        _ = try log.take(content, statement: content.encoded)
        return log
    }

    @Test("the covered events go, the state and a refold stay, and new events never reuse their offsets")
    func dropKeepsStateAndOffsets() throws {
        let log = try checkpointed()
        let hash = try log.stateHash()
        let dropped = try log.dropCoveredHistory()
        #expect(dropped.events == 4)
        #expect(dropped.bytesAfter <= dropped.bytesBefore)
        #expect(try log.eventCount() == 0)
        #expect(try log.stateHash() == hash)
        #expect(try log.checkpoint()?.historyHeld == false)
        #expect(try log.dropCoveredHistory().events == 0)  // nothing more to drop
        let event = try log.append(NewEvent(item: bolts, .quantityChanged(quantity: 9)))
        #expect(event.offset == 5)
        #expect(try log.checkIntegrity(refold: true).isOK)
        #expect(try log.projection(Item.self, id: nuts)?.deleted == true)
    }

    @Test("a thin client whose cursor lies in the dropped history is served the checkpoint's state, then the tail")
    func thinClientAfterTheDrop() throws {
        let log = try checkpointed()
        _ = try log.dropCoveredHistory()
        try log.append(NewEvent(item: bolts, .quantityChanged(quantity: 9)))
        let state = try log.thinClientEvents(after: 2, limit: 1)
        #expect(state.allSatisfy { $0.offset == 4 })
        let payloads = state.map { "\($0.event.entityID == bolts ? "bolts" : "nuts") \($0.event.payload)" }
        #expect(
            payloads.sorted() == [
                #"bolts {"name":"Bolts","quantity":5,"type":"Created"}"#,
                #"bolts {"note":"aisle 4","type":"NoteChanged"}"#,
                #"nuts {"name":"Nuts","quantity":2,"type":"Created"}"#, #"nuts {"type":"Deleted"}"#,
            ])
        #expect(try log.thinClientEvents(after: 0, limit: 10).map(\.event.eventID) == state.map(\.event.eventID))
        let tail = try log.thinClientEvents(after: 4, limit: 10)
        #expect(tail.map(\.offset) == [5])
    }

    @Test("a log started from a checkpoint serves a new thin client its state at offset 1")
    func thinClientOfAStartedLog() throws {
        let source = try checkpointed()
        let held = try #require(try source.checkpoint())
        let log = try makeLog("b")
        var pages = source.checkpointBasePages()
        try log.start(from: held.content, statement: held.statement) { try pages.next() }
        #expect(try log.thinClientEvents(after: 0, limit: 10).count == 4)
        let event = try log.append(NewEvent(item: bolts, .renamed(name: "Hex bolts")))
        #expect(event.offset == 2)
        #expect(try log.thinClientEvents(after: 1, limit: 10).map(\.offset) == [2])
    }

    @Test("a thin client behind the dropped history is served the events that arrived before a covered one, folded in")
    func thinClientGetsEarlyUncoveredEvents() throws {
        let p = try makeLog("p")
        let q = try makeLog("q")
        let created = try p.append(NewEvent(item: bolts, .created(name: "Bolts", quantity: 5))).event
        let renamed = try p.append(NewEvent(item: bolts, .renamed(name: "Hex bolts"))).event
        let other = try q.append(NewEvent(item: nuts, .created(name: "Nuts", quantity: 2))).event
        // m holds p's first event and q's: its checkpoint covers those two.
        let maker = try makeLog("m")
        _ = try maker.ingest([created, other])
        let content = try maker.makeCheckpoint()
        // r got the rename (offset 2) before q's event (offset 3), which the checkpoint covers.
        let log = try makeLog("r")
        _ = try log.ingest([created])
        _ = try log.ingest([renamed])
        _ = try log.ingest([other])
        _ = try log.take(content, statement: content.encoded)
        _ = try log.dropCoveredHistory()
        #expect(try log.eventCount() == 1)
        let state = try log.thinClientEvents(after: 0, limit: 10)
        #expect(state.allSatisfy { $0.offset == 3 })
        #expect(state.contains { $0.event.entityID == bolts && $0.event.payload.contains("Hex bolts") })
        #expect(state.contains { $0.event.entityID == nuts })
        #expect(try log.thinClientEvents(after: 3, limit: 10).isEmpty)
    }

    @Test("a thin client asking for the checkpoint of a log that holds its history is served its state, then the rest")
    func thinClientFromTheCheckpointOnRequest() throws {
        let log = try checkpointed()
        try log.append(NewEvent(item: bolts, .quantityChanged(quantity: 9)))
        #expect(try log.thinClientEvents(after: 0, limit: 10).count == 5)  // the whole history, as always
        let state = try log.thinClientEvents(after: 0, limit: 10, fromCheckpoint: true)
        #expect(state.count == 4 && state.allSatisfy { $0.offset == 4 })
        #expect(try log.thinClientEvents(after: 4, limit: 10, fromCheckpoint: true).map(\.offset) == [5])
        #expect(
            try log.thinClientEvents(after: 0, limit: 10, fromCheckpoint: true).map(\.event.eventID)
                == state.map(\.event.eventID))
    }
}
