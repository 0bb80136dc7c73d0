import Foundation
import TestSupport
import Testing

@testable import Replica

/// Checkpoints of the state (docs/storage.md "Checkpoints"): a log made
/// from one folds exactly as the log that holds the whole history.
@Suite("State checkpoints")
struct StateCheckpointTests {
    let directory: TemporaryDirectory
    let clock = ManualClock(1_000)

    init() throws { directory = try TemporaryDirectory() }

    private func makeLog(_ name: String) throws -> EventLog {
        try EventLog.create(at: directory.path("\(name).db"), replicaID: name, options: .testing(clock: clock))
    }

    /// Every event `from` holds that `to` lacks, ingested into `to`.
    private func sync(_ from: EventLog, to: EventLog) throws {
        var pages = try from.missingEventPages(for: try to.cursor(), maxEvents: 500)
        while let page = try pages.next() { try to.ingest(page) }
    }

    /// A fresh log started from `source`'s checkpoint, its bases in pages of 7.
    private func started(from source: EventLog, _ name: String) throws -> EventLog {
        let held = try #require(try source.checkpoint())
        let log = try makeLog(name)
        var pages = source.checkpointBasePages(pageSize: 7)
        try log.start(from: held.content, statement: held.statement) { try pages.next() }
        return log
    }

    private func write(_ log: EventLog, items: Range<Int>, _ event: ItemEvent) throws {
        for index in items {
            clock.advance(by: 1)
            try log.append(NewEvent(item: "i\(index)", event))
        }
    }

    @Test("A fresh log started from a checkpoint has the source's state, cursor and hash, and folds the tail alike")
    func startFromCheckpoint() throws {
        let a = try makeLog("a")
        try write(a, items: 0..<30, .created(name: "Bolts", quantity: 1))
        try write(a, items: 0..<30, .quantityChanged(quantity: 7))
        try write(a, items: 3..<5, .deleted)
        let content = try a.makeCheckpoint()
        #expect(try a.take(content, statement: [1, 2, 3]) == .taken(refolded: 0))
        #expect(try a.take(content, statement: [1, 2, 3]) == .alreadyHeld)

        let b = try started(from: a, "b")
        #expect(try b.stateHash() == a.stateHash())
        #expect(try b.cursor() == a.cursor())
        #expect(try b.eventCount() == 0)
        #expect(try b.checkpoint()?.historyHeld == false)
        #expect(try a.checkpoint()?.historyHeld == true)

        // The tail: edits, an edit of a deleted item, a rename.
        try write(a, items: 0..<10, .renamed(name: "Nuts"))
        try write(a, items: 3..<4, .quantityChanged(quantity: 99))
        try sync(a, to: b)
        #expect(try b.projection(Item.self, id: "i3")?.deleted == true)
        #expect(try b.projection(Item.self, id: "i3")?.quantity == 7)
        #expect(try b.projection(Item.self, id: "i1")?.name == "Nuts")
        #expect(try b.stateHash() == a.stateHash())
        #expect(try b.checkIntegrity(refold: true).findings == [])
    }

    @Test("An undo after the checkpoint of an event it covers cancels nothing, on a log with history and one without")
    func undoAcrossTheCheckpoint() throws {
        let a = try makeLog("a")
        try write(a, items: 0..<2, .created(name: "Bolts", quantity: 1))
        try write(a, items: 0..<2, .quantityChanged(quantity: 5))
        _ = try a.take(try a.makeCheckpoint(), statement: [])
        let b = try started(from: a, "b")

        clock.advance(by: 1)
        #expect(throws: EventLogError.self) { try a.undo(entityType: Item.entityType, entityID: "i0") }
        try write(a, items: 0..<1, .quantityChanged(quantity: 9))
        clock.advance(by: 1)
        try a.undo(entityType: Item.entityType, entityID: "i0")
        #expect(try a.projection(Item.self, id: "i0")?.quantity == 5)
        try sync(a, to: b)
        #expect(try b.projection(Item.self, id: "i0")?.quantity == 5)
        #expect(try b.stateHash() == a.stateHash())
    }

    @Test(
        "An event the checkpoint does not cover that sorts before what it covers folds on top of it, alike everywhere")
    func lateEventFoldsOnTheBase() throws {
        let a = try makeLog("a")
        let c = try makeLog("c")
        try write(a, items: 0..<3, .created(name: "Bolts", quantity: 1))
        // c writes at an earlier time, and a hears of it only after its checkpoint.
        let early = Event(
            eventID: UUID(), feed: FeedID(replicaID: "c"), seq: 1, timeMs: 500, entityType: "item", entityID: "i1",
            payload: ItemEvent.noteChanged(note: "from c").payload)
        try c.ingest([early])
        _ = try a.take(try a.makeCheckpoint(), statement: [])
        let b = try started(from: a, "b")
        try a.ingest([early])
        try b.ingest([early])
        #expect(try a.projection(Item.self, id: "i1")?.note == "from c")
        #expect(try b.stateHash() == a.stateHash())
        // A log holding the whole history recomputes the checkpoint and takes it.
        try sync(a, to: c)
        #expect(try c.take(try #require(try a.checkpoint()).content, statement: []) == .taken(refolded: 1))
        #expect(try c.stateHash() == a.stateHash())
    }

    @Test("A checkpoint whose state differs from the events it covers is refused, naming its maker")
    func mismatchIsReported() throws {
        let a = try makeLog("a")
        let c = try makeLog("c")
        try write(a, items: 0..<5, .created(name: "Bolts", quantity: 1))
        try sync(a, to: c)
        var forged = try a.makeCheckpoint()
        forged.stateHash[0] ^= 1
        #expect {
            try c.take(forged, statement: [])
        } throws: { error in
            guard case .mismatch(_, let madeBy, let detail) = error as? CheckpointError else { return false }
            return madeBy == "a" && detail.contains("state hash")
        }
        var wrongLink = try a.makeCheckpoint()
        wrongLink.links[FeedID(replicaID: "a")]![0] ^= 1
        #expect(throws: CheckpointError.self) { try c.take(wrongLink, statement: []) }
        #expect(try c.checkpoint() == nil)
        // One that covers events c lacks is not taken either.
        try write(a, items: 5..<6, .created(name: "Nuts", quantity: 1))
        #expect {
            try c.take(try a.makeCheckpoint(), statement: [])
        } throws: { error in
            guard case .notApplicable(let why) = error as? CheckpointError else { return false }
            return why.contains("lacks 1 events")
        }
    }

    @Test("Bases that do not match the checkpoint leave a fresh log empty")
    func forgedBasesAreRefused() throws {
        let a = try makeLog("a")
        try write(a, items: 0..<5, .created(name: "Bolts", quantity: 1))
        let content = try a.makeCheckpoint()
        _ = try a.take(content, statement: [])
        var bases = try a.checkpointBases(after: nil, limit: 100)
        bases[2].state = bases[2].state!.replacingOccurrences(of: "Bolts", with: "Gold")
        let b = try makeLog("b")
        #expect(throws: CheckpointError.self) {
            try b.start(from: content, statement: [], bases: bases)
        }
        #expect(try b.checkpoint() == nil)
        #expect(try b.cursor() == VectorCursor())
        #expect(try b.projections(Item.self).isEmpty)
    }

    @Test("A holder at the checkpoint keeps the entity: another writer's later edit is dropped on both logs")
    func sessionAcrossTheCheckpoint() throws {
        let a = try makeLog("a")
        try write(a, items: 0..<1, .created(name: "Bolts", quantity: 1))
        clock.advance(by: 1)
        try a.claim(entityType: Item.entityType, entityID: "i0")
        _ = try a.take(try a.makeCheckpoint(), statement: [])
        let b = try started(from: a, "b")
        let other = Event(
            eventID: UUID(), feed: FeedID(replicaID: "z"), seq: 1, timeMs: 5_000, entityType: "item", entityID: "i0",
            payload: ItemEvent.quantityChanged(quantity: 42).payload)
        try a.ingest([other])
        try b.ingest([other])
        #expect(try a.projection(Item.self, id: "i0")?.quantity == 1)
        #expect(try b.projection(Item.self, id: "i0")?.quantity == 1)
        #expect(try b.session(entityType: Item.entityType, entityID: "i0").state.holder == "a")
        #expect(try b.stateHash() == a.stateHash())
    }

    @Test("A checkpoint and its bases survive a reopen, and the next one extends it")
    func reopenAndExtend() throws {
        let a = try makeLog("a")
        try write(a, items: 0..<4, .created(name: "Bolts", quantity: 1))
        let first = try a.makeCheckpoint()
        _ = try a.take(first, statement: [])
        let b = try started(from: a, "b")
        try write(a, items: 0..<4, .quantityChanged(quantity: 3))
        try sync(a, to: b)
        let reopened = try EventLog.open(at: directory.path("b.db"), options: .testing(clock: clock))
        #expect(try reopened.checkpoint()?.content == first)
        let second = try a.makeCheckpoint()
        #expect(second.previous == first.id)
        #expect(try reopened.take(second, statement: []) == .taken(refolded: 0))
        #expect(try reopened.stateHash() == a.stateHash())
        #expect(try reopened.makeCheckpoint().baseDigest == second.baseDigest)
    }

    @Test("A thin client pulling from a log started from a checkpoint is served an undo as the value after it")
    func thinClientUndoOnTheBase() throws {
        let a = try makeLog("a")
        let id = "00000000-0000-4000-8000-00000000000a"
        clock.advance(by: 1)
        try a.append(NewEvent(item: id, .created(name: "Bolts", quantity: 4)))
        _ = try a.take(try a.makeCheckpoint(), statement: [])
        let b = try started(from: a, "b")
        clock.advance(by: 1)
        try a.append(NewEvent(item: id, .quantityChanged(quantity: 9)))
        clock.advance(by: 1)
        try a.undo(entityType: Item.entityType, entityID: id)
        try sync(a, to: b)
        // A new client first gets the checkpoint's state at offset 1, then the tail.
        let state = try b.thinClientEvents(after: 0, limit: 10)
        #expect(state.map(\.event.payload) == [ItemEvent.created(name: "Bolts", quantity: 4).payload])
        #expect(state.map(\.offset) == [1])
        let served = try b.thinClientEvents(after: 1, limit: 10).map(\.event.payload)
        #expect(served.last == ItemEvent.quantityChanged(quantity: 4).payload, "\(served)")
        #expect(try b.projection(Item.self, id: id)?.quantity == 4)
    }
}
