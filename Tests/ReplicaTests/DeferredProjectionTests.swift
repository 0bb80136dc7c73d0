import Foundation
import TestSupport
import Testing

@testable import Replica

/// Projection rows that lag the log: a large batch leaves them pending in
/// memory, and every read folds the unwritten tail itself, so what a reader
/// sees never depends on when the rows are written (docs/storage.md).
/// Each test compares a log that defers with one that writes its rows in
/// every transaction (`ProjectionWrites.immediate`), which got the same events.
@Suite("Deferred projection rows")
struct DeferredProjectionTests {
    let directory: TemporaryDirectory
    let clock = ManualClock(2_000_000)

    init() throws {
        directory = try TemporaryDirectory()
    }

    // MARK: - Reads fold the tail

    @Test("A large batch leaves the rows pending, yet reads see every event folded")
    func largeBatchLeavesRowsPendingButReadsFoldTheTail() throws {
        let batch = Self.itemBatch(origins: ["r1", "r2"], perOrigin: 300, items: 50, seed: 1)
        let deferred = try makeLog("deferred")
        let immediate = try makeLog("immediate", .immediate)

        try deferred.ingest(batch)
        try immediate.ingest(batch)

        #expect(deferred.hasPendingProjections)
        #expect(!immediate.hasPendingProjections)
        // The rows lag: nothing of the batch is folded into them yet.
        #expect(try RawSQL.projectedOffset(deferred.path) == 0)
        #expect(try RawSQL.int(deferred.path, "SELECT max(local_offset) FROM event_log") == 600)
        #expect(try RawSQL.int(deferred.path, "SELECT count(*) FROM items") == 0)
        #expect(try RawSQL.projectedOffset(immediate.path) == 600)

        let expectedItems = try immediate.projections(Item.self)
        let expectedHash = try immediate.stateHash()
        #expect(expectedItems.count == 50)
        #expect(try deferred.projections(Item.self) == expectedItems)
        #expect(try deferred.stateHash() == expectedHash)
        for item in ["item-0", "item-17", "item-49"] {
            #expect(try deferred.projection(Item.self, id: item) == (try immediate.projection(Item.self, id: item)))
        }
        // Reading wrote nothing.
        #expect(try RawSQL.projectedOffset(deferred.path) == 0)

        try deferred.writePendingProjections()

        #expect(!deferred.hasPendingProjections)
        #expect(try RawSQL.projectedOffset(deferred.path) == 600)
        #expect(try RawSQL.items(deferred.path) == expectedItems)
        #expect(try RawSQL.entityStates(deferred.path) == (try RawSQL.entityStates(immediate.path)))
        #expect(try RawSQL.chainProblems(deferred.path, checkHeads: true) == [])
        #expect(try deferred.stateHash() == expectedHash)
    }

    @Test("The pending rows are written by the next small batch, past the lag limits, or on request")
    func pendingRowsAreWrittenWhenTheOptionsSay() throws {
        let batch = Self.itemBatch(origins: ["r1", "r2"], perOrigin: 300, items: 50, seed: 2)
        let more = Self.itemBatch(origins: ["r1", "r2"], perOrigin: 300, items: 50, seed: 3, firstSeq: 301)

        // The next batch of fewer than `deferFromBatchSize` events writes them.
        let smallNext = try makeLog("small-next")
        try smallNext.ingest(batch)
        #expect(smallNext.hasPendingProjections)
        try smallNext.ingest([Fixtures.itemEvent("r3", seq: 1, time: 5, item: "item-3", .renamed(name: "Late"))])
        #expect(!smallNext.hasPendingProjections)
        #expect(try RawSQL.projectedOffset(smallNext.path) == 601)
        #expect(try RawSQL.int(smallNext.path, "SELECT count(*) FROM items") == 50)

        // The lag in events.
        let lagLimited = try makeLog("lag-limited", Self.writes(maxLagEvents: 1_000))
        try lagLimited.ingest(batch)
        #expect(lagLimited.hasPendingProjections)
        #expect(try RawSQL.projectedOffset(lagLimited.path) == 0)
        try lagLimited.ingest(more)
        #expect(!lagLimited.hasPendingProjections)
        #expect(try RawSQL.projectedOffset(lagLimited.path) == 1200)

        // The number of entities.
        let entityLimited = try makeLog("entity-limited", Self.writes(maxEntities: 20))
        try entityLimited.ingest(batch)
        #expect(!entityLimited.hasPendingProjections)
        #expect(try RawSQL.projectedOffset(entityLimited.path) == 600)

        // A batch one below the threshold writes, one at it defers.
        let threshold = try makeLog("threshold", Self.writes(deferFromBatchSize: 600))
        try threshold.ingest(Self.itemBatch(origins: ["r5"], perOrigin: 599, items: 50, seed: 20))
        #expect(!threshold.hasPendingProjections)
        try threshold.ingest(Self.itemBatch(origins: ["r6"], perOrigin: 600, items: 50, seed: 21))
        #expect(threshold.hasPendingProjections)
        #expect(try RawSQL.projectedOffset(threshold.path) == 599)

        // On request.
        let requested = try makeLog("requested")
        try requested.ingest(batch)
        try requested.ingest(more)
        #expect(try RawSQL.projectedOffset(requested.path) == 0)
        try requested.writePendingProjections()
        #expect(!requested.hasPendingProjections)
        #expect(try RawSQL.projectedOffset(requested.path) == 1200)
        #expect(try RawSQL.chainProblems(requested.path, checkHeads: true) == [])

        // Immediate: never pending.
        let immediate = try makeLog("immediate", .immediate)
        try immediate.ingest(batch)
        #expect(!immediate.hasPendingProjections)
        try immediate.ingest(more)
        #expect(try RawSQL.projectedOffset(immediate.path) == 1200)

        let expected = try RawSQL.entityStates(immediate.path)
        #expect(try RawSQL.entityStates(lagLimited.path) == expected)
        #expect(try RawSQL.entityStates(requested.path) == expected)
    }

    // MARK: - Other connections

    @Test("Another connection sees the pending tail folded, and its write of the rows is noticed")
    func anotherConnectionSeesTheTailAndItsWriteIsNoticed() throws {
        let batch = Self.itemBatch(origins: ["r1", "r2"], perOrigin: 300, items: 50, seed: 4)
        let first = try makeLog("shared")
        let reference = try makeLog("reference", .immediate)
        try first.ingest(batch)
        try reference.ingest(batch)
        #expect(first.hasPendingProjections)

        // A reader on another connection folds the tail it finds in the file.
        let second = try EventLog.open(at: first.path, options: options())
        #expect(try second.projections(Item.self) == (try reference.projections(Item.self)))
        #expect(try second.stateHash() == (try reference.stateHash()))
        #expect(try second.projection(Item.self, id: "item-3") == (try reference.projection(Item.self, id: "item-3")))

        // A small append through the second connection writes every pending row.
        let appended = try second.append(NewEvent(item: "item-3", .renamed(name: "Renamed by the second")))
        try reference.ingest([appended.event])
        #expect(!second.hasPendingProjections)
        #expect(try RawSQL.projectedOffset(first.path) == 601)
        #expect(try RawSQL.entityStates(first.path) == (try RawSQL.entityStates(reference.path)))

        // The first connection still holds its own fold of the old tail; it must notice the rows moved on.
        try expectSameState(first, reference, "first after the second wrote the rows")
        let late = Fixtures.itemEvent("r3", seq: 1, time: 10, item: "item-3", .noteChanged(note: "late"))
        try first.ingest([late])
        try reference.ingest([late])
        try expectSameState(first, reference, "first after a late event")
        try expectSameState(second, reference, "second after the first's late event")

        // Both connections defer in turn; each folds what the other stored.
        let more = Self.itemBatch(origins: ["r1", "r2"], perOrigin: 150, items: 50, seed: 5, firstSeq: 301)
        try first.ingest(more)
        try reference.ingest(more)
        #expect(first.hasPendingProjections)
        try expectSameState(second, reference, "second reads the first's pending batch")
        let evenMore = Self.itemBatch(origins: ["r1", "r2"], perOrigin: 150, items: 50, seed: 6, firstSeq: 451)
        try second.ingest(evenMore)
        try reference.ingest(evenMore)
        #expect(second.hasPendingProjections)
        try expectSameState(first, reference, "first reads the second's pending batch")
        try expectSameState(second, reference, "second after its own pending batch")
        #expect(try RawSQL.projectedOffset(first.path) == 602)

        // The first writes everything, including what the second folded; the second must notice.
        try first.writePendingProjections()
        #expect(try RawSQL.projectedOffset(first.path) == (try first.lastOffset()))
        #expect(try RawSQL.entityStates(first.path) == (try RawSQL.entityStates(reference.path)))
        let last = try second.append(NewEvent(item: "item-9", .quantityChanged(quantity: 77)))
        try reference.ingest([last.event])
        try expectSameState(second, reference, "second after the first wrote its rows")
        try expectSameState(first, reference, "first at the end")
        for item in ["item-3", "item-9", "item-20"] {
            let held = try first.events(entityType: Item.entityType, entityID: item).map(\.event.eventID)
            let expected = try reference.events(entityType: Item.entityType, entityID: item).map(\.event.eventID)
            #expect(held == expected, "\(item)")
        }
        #expect(try RawSQL.chainProblems(first.path, checkHeads: true) == [])
    }

    // MARK: - Crashes

    @Test("A log dropped with rows pending reopens with every event folded")
    func droppedLogReopensWithTheTailFolded() throws {
        let batch = Self.itemBatch(origins: ["r1", "r2"], perOrigin: 300, items: 50, seed: 7)
        let path = directory.path("dropped.db")
        do {
            let log = try EventLog.create(at: path, replicaID: "dropped", options: options())
            try log.ingest(batch)
            #expect(log.hasPendingProjections)
        }
        #expect(try RawSQL.projectedOffset(path) == 0)
        #expect(try RawSQL.int(path, "SELECT count(*) FROM event_log") == 600)
        #expect(try RawSQL.int(path, "SELECT count(*) FROM items") == 0)
        let reference = try makeLog("reference", .immediate)
        try reference.ingest(batch)

        let reopened = try EventLog.open(at: path, options: options())
        #expect(reopened.hasPendingProjections, "a fresh open sees that the file's rows lag its events")
        #expect(!(try EventLog.open(at: reference.path, options: options())).hasPendingProjections)

        #expect(try reopened.projections(Item.self) == (try reference.projections(Item.self)))
        #expect(try reopened.stateHash() == (try reference.stateHash()))
        for index in 0..<50 {
            let item = "item-\(index)"
            let expected = batch.filter { $0.entityID == item }.sorted { $0.orderKey < $1.orderKey }.map(\.eventID)
            let held = try reopened.events(entityType: Item.entityType, entityID: item).map(\.event.eventID)
            #expect(held == expected, "\(item)")
        }

        // The first small write brings the rows up to date.
        let appended = try reopened.append(NewEvent(item: "item-1", .renamed(name: "After reopening")))
        try reference.ingest([appended.event])
        #expect(try RawSQL.projectedOffset(path) == 601)
        #expect(!reopened.hasPendingProjections)
        #expect(!(try EventLog.open(at: path, options: options())).hasPendingProjections)
        #expect(try RawSQL.entityStates(path) == (try RawSQL.entityStates(reference.path)))
        #expect(try RawSQL.chainProblems(path, checkHeads: true) == [])
    }

    @Test("A copy of the files taken while rows are pending opens with every event folded")
    func copyTakenWhileRowsArePendingOpensFolded() throws {
        let batch = Self.itemBatch(origins: ["r1", "r2"], perOrigin: 300, items: 50, seed: 8)
        let log = try makeLog("live")
        let reference = try makeLog("reference", .immediate)
        let written = Self.itemBatch(origins: ["r0"], perOrigin: 10, items: 50, seed: 80)
        try log.ingest(written)
        try reference.ingest(written)
        try log.ingest(batch)
        try reference.ingest(batch)
        #expect(log.hasPendingProjections)

        // What a power cut would leave: the database and its WAL as they are now.
        let copy = directory.path("copy.db")
        try FileManager.default.copyItem(atPath: log.path, toPath: copy)
        try FileManager.default.copyItem(atPath: log.path + "-wal", toPath: copy + "-wal")

        let recovered = try EventLog.open(at: copy, options: options())
        #expect(try RawSQL.projectedOffset(copy) == (try RawSQL.projectedOffset(log.path)))
        try expectSameState(recovered, reference, "recovered copy")
        try recovered.writePendingProjections()
        #expect(try RawSQL.entityStates(copy) == (try RawSQL.entityStates(reference.path)))
        #expect(try RawSQL.chainProblems(copy, checkHeads: true) == [])
    }

    // MARK: - Refolds through the chain

    @Test("Undos and late events on entities whose rows are pending fold as in immediate mode")
    func undosAndLateEventsWhileRowsArePending() throws {
        let batch = Self.itemBatch(origins: ["r1", "r2"], perOrigin: 300, items: 50, seed: 9)
        let deferred = try makeLog("deferred")
        let immediate = try makeLog("immediate", .immediate)
        try deferred.ingest(batch)
        try immediate.ingest(batch)
        #expect(deferred.hasPendingProjections)

        // A large batch of undos (some of undos) and late events for the pending entities.
        let undosAndLate = Self.undosAndLateEvents(targets: batch, origin: "r3", count: 300, seed: 10)
        try deferred.ingest(undosAndLate)
        try immediate.ingest(undosAndLate)
        #expect(deferred.hasPendingProjections)
        #expect(try RawSQL.projectedOffset(deferred.path) == 0)
        try expectSameState(deferred, immediate, "after the undos and late events")
        let refolded = try ConvergencePropertyTests.refoldEveryItem(batch + undosAndLate)
        #expect(try deferred.projections(Item.self) == refolded)

        // A local undo of an entity whose events are all pending: its target comes through the chain.
        let item = "item-7"
        let expectedTarget = try #require(
            Fold.undoTarget(
                inCanonicalOrder: (batch + undosAndLate).filter { $0.entityID == item }.sorted {
                    $0.orderKey < $1.orderKey
                }))
        let undo = try deferred.undo(entityType: Item.entityType, entityID: item)
        #expect(UndoneEvent.parse(undo.event.payload)?.eventID == expectedTarget.eventID)
        try immediate.ingest([undo.event])
        try expectSameState(deferred, immediate, "after the local undo")
        #expect(!deferred.hasPendingProjections)
        #expect(try RawSQL.entityStates(deferred.path) == (try RawSQL.entityStates(immediate.path)))
        #expect(try RawSQL.chainProblems(deferred.path, checkHeads: true) == [])
    }

    @Test("With every batch deferred, local undos and appends fold into the pending rows")
    func localUndosFoldIntoPendingRows() throws {
        let batch = Self.itemBatch(origins: ["r1", "r2"], perOrigin: 300, items: 50, seed: 11)
        let lazy = try makeLog("lazy", Self.writes(deferFromBatchSize: 1))
        let immediate = try makeLog("immediate", .immediate)
        try lazy.ingest(batch)
        try immediate.ingest(batch)

        var history = batch
        for (step, item) in ["item-7", "item-7", "item-12", "item-7", "item-30"].enumerated() {
            let expectedTarget = Fold.undoTarget(
                inCanonicalOrder: history.filter { $0.entityID == item }.sorted { $0.orderKey < $1.orderKey })
            let undo = try lazy.undo(entityType: Item.entityType, entityID: item)
            #expect(UndoneEvent.parse(undo.event.payload)?.eventID == expectedTarget?.eventID, "undo \(step)")
            history.append(undo.event)
            try immediate.ingest([undo.event])
            #expect(lazy.hasPendingProjections, "undo \(step)")
            try expectSameState(lazy, immediate, "after undo \(step) of \(item)")
            if step == 2 {
                let edit = try lazy.append(NewEvent(item: "item-7", .quantityChanged(quantity: 1234)))
                history.append(edit.event)
                try immediate.ingest([edit.event])
                try expectSameState(lazy, immediate, "after an append between undos")
            }
        }
        #expect(try RawSQL.projectedOffset(lazy.path) == 0)
        for item in ["item-7", "item-12", "item-30"] {
            let held = try lazy.events(entityType: Item.entityType, entityID: item).map(\.event.eventID)
            let expected = try immediate.events(entityType: Item.entityType, entityID: item).map(\.event.eventID)
            #expect(held == expected, "\(item)")
        }
        try lazy.writePendingProjections()
        #expect(try RawSQL.entityStates(lazy.path) == (try RawSQL.entityStates(immediate.path)))
        #expect(try RawSQL.chainProblems(lazy.path, checkHeads: true) == [])
    }

    // MARK: - Types no domain folds

    @Test("Several entities of a type no domain folds get their chain heads written in one transaction")
    func severalUnfoldedEntitiesInOneWrite() throws {
        // Only chain heads (`last_offset`) are written for these; no state.
        let notes = (1...3).map {
            Fixtures.rawEvent(
                "r1", seq: UInt64($0), time: 100 + Int64($0), type: "note", entity: "note-\($0)",
                payload: #"{"type":"Written"}"#)
        }
        let policies: [(String, EventLog.Options.ProjectionWrites)] = [
            ("immediate", .immediate), ("deferred", Self.writes(deferFromBatchSize: 1)),
        ]
        for (name, writes) in policies {
            let log = try makeLog(name, writes)
            do {
                try log.ingest(notes)
                try log.writePendingProjections()
            } catch {
                Issue.record("\(name): \(error)")
                continue
            }
            #expect(try log.eventCount() == 3, "\(name)")
            #expect(try RawSQL.projectedOffset(log.path) == 3, "\(name)")
            #expect(try RawSQL.chainProblems(log.path, checkHeads: true) == [], "\(name)")
            let held = try log.events(entityType: "note", entityID: "note-2").map(\.event.eventID)
            #expect(held == [notes[1].eventID], "\(name)")
        }
    }

    // MARK: - Poison

    @Test("A poison event in a deferred batch is counted once the rows are written, as in immediate mode")
    func poisonInADeferredBatchIsCounted() throws {
        var batch = Self.itemBatch(origins: ["r1", "r2"], perOrigin: 300, items: 50, seed: 12)
        batch.append(
            Fixtures.rawEvent(
                "r3", seq: 1, time: 1_000_500, entity: "item-5",
                payload: #"{"type":"QuantityChanged","quantity":"many"}"#
            ))
        let deferred = try makeLog("deferred")
        let immediate = try makeLog("immediate", .immediate)
        try deferred.ingest(batch)
        try immediate.ingest(batch)
        #expect(deferred.hasPendingProjections)
        #expect(try immediate.poisonEventCount() == 1)
        // Counted while its row is still pending, and only once when the pending fold also refolds it.
        #expect(try deferred.poisonEventCount() == 1)
        try expectSameState(deferred, immediate, "with the poison pending")

        try deferred.writePendingProjections()
        #expect(try deferred.poisonEventCount() == 1)
        #expect(try deferred.poisonEventCount() == (try immediate.poisonEventCount()))

        // A late event refolds the entity in another deferred batch: the poison is still counted once.
        var lateBatch = Self.itemBatch(origins: ["r4"], perOrigin: 300, items: 50, seed: 13)
        lateBatch.append(Fixtures.itemEvent("r3", seq: 2, time: 7, item: "item-5", .renamed(name: "Early")))
        try deferred.ingest(lateBatch)
        try immediate.ingest(lateBatch)
        #expect(deferred.hasPendingProjections)
        #expect(try deferred.poisonEventCount() == 1)
        try deferred.writePendingProjections()
        #expect(try deferred.poisonEventCount() == 1)
        #expect(try immediate.poisonEventCount() == 1)
        try expectSameState(deferred, immediate, "after the refold")
    }

    @Test("A poison event pending when the log was dropped is counted after reopening")
    func poisonPendingAtADropIsCountedAfterReopening() throws {
        var batch = Self.itemBatch(origins: ["r1", "r2"], perOrigin: 300, items: 50, seed: 14)
        batch.append(
            Fixtures.rawEvent(
                "r3", seq: 1, time: 1_000_500, entity: "item-5",
                payload: #"{"type":"QuantityChanged","quantity":"many"}"#
            ))
        let path = directory.path("dropped.db")
        do {
            let log = try EventLog.create(at: path, replicaID: "dropped", options: options())
            try log.ingest(batch)
            #expect(log.hasPendingProjections)
        }
        let reopened = try EventLog.open(at: path, options: options())
        try reopened.writePendingProjections()
        #expect(try reopened.poisonEventCount() == 1)
        #expect(try RawSQL.projectedOffset(path) == 601)
    }

    // MARK: - Property

    static let seeds: [UInt64] = [1, 7, 42, 0xC0FF_EE00]

    @Test("Random batches give every projection-write policy the state of immediate mode", arguments: seeds)
    func randomBatchesAgreeWithImmediateMode(seed: UInt64) throws {
        var rng = SplitMix64(seed: seed)
        let feeds = RandomFeeds.generate(using: &rng, origins: 3, events: 1_500, items: 150)
        let reference = try makeLog("immediate", .immediate)
        let deferred = try makeLog("deferred")
        // Every batch deferred, written at a lag of 100 events or 40 entities.
        let tight = try makeLog("tight", Self.writes(deferFromBatchSize: 1, maxLagEvents: 100, maxEntities: 40))
        // Every batch deferred, written at a lag of 1,500 events.
        let lazy = try makeLog("lazy", Self.writes(deferFromBatchSize: 1, maxLagEvents: 1_500))
        // Large batches deferred, written at a lag of 600 events or 100 entities.
        let lagged = try makeLog("lagged", Self.writes(maxLagEvents: 600, maxEntities: 100))
        let sharedA = try makeLog("shared")
        let sharedB = try EventLog.open(at: sharedA.path, options: options())
        let named: [(String, EventLog)] = [
            ("deferred", deferred), ("tight", tight), ("lazy", lazy), ("lagged", lagged), ("shared A", sharedA),
            ("shared B", sharedB),
        ]
        var sawPending: Set<String> = []

        let batches = feeds.batches(using: &rng)
        let largeBatches = batches.filter { $0.count >= 256 }.count
        #expect(largeBatches > 0 && largeBatches < batches.count, "seed \(seed)")
        for (number, batch) in batches.enumerated() {
            let context = "seed \(seed), batch \(number) of \(batch.count) events"
            let report = try reference.ingest(batch)
            #expect(report.isComplete, "\(context): \(report)")
            try deferred.ingest(batch)
            try tight.ingest(batch)
            try lazy.ingest(batch)
            try lagged.ingest(batch)
            try (Bool.random(using: &rng) ? sharedA : sharedB).ingest(batch)
            let expectedItems = try reference.projections(Item.self)
            let expectedHash = try reference.stateHash()
            for (name, log) in named {
                if log.hasPendingProjections { sawPending.insert(name) }
                #expect(try log.projections(Item.self) == expectedItems, "\(context): \(name)")
                #expect(try log.stateHash() == expectedHash, "\(context): \(name)")
            }
        }
        #expect(sawPending.isSuperset(of: ["deferred", "tight", "lazy"]), "seed \(seed): \(sawPending)")

        let expectedStates = try RawSQL.entityStates(reference.path)
        let probe = (0..<5).map { _ in "item-\(Int.random(in: 0..<150, using: &rng))" }
        for (name, log) in named {
            try log.writePendingProjections()
            #expect(try log.poisonEventCount() == (try reference.poisonEventCount()), "seed \(seed): \(name)")
            #expect(try RawSQL.entityStates(log.path) == expectedStates, "seed \(seed): \(name)")
            #expect(try RawSQL.chainProblems(log.path, checkHeads: true) == [], "seed \(seed): \(name)")
            for item in probe {
                let held = try log.events(entityType: Item.entityType, entityID: item).map(\.event.eventID)
                let expected = try reference.events(entityType: Item.entityType, entityID: item).map(\.event.eventID)
                #expect(held == expected, "seed \(seed): \(name): \(item)")
            }
        }
        #expect(try reference.poisonEventCount() > 0, "seed \(seed): the history has no poison event")
    }

    // MARK: - Helpers

    private func options(_ writes: EventLog.Options.ProjectionWrites = .init()) -> EventLog.Options {
        var options = EventLog.Options.testing(clock: clock)
        options.projectionWrites = writes
        return options
    }

    private func makeLog(
        _ name: String, _ writes: EventLog.Options.ProjectionWrites = .init()
    ) throws -> EventLog {
        try EventLog.create(at: directory.path("\(name).db"), replicaID: name, options: options(writes))
    }

    private static func writes(
        deferFromBatchSize: Int = 256, maxLagEvents: Int = 20_000, maxEntities: Int = 8_192
    ) -> EventLog.Options.ProjectionWrites {
        var writes = EventLog.Options.ProjectionWrites()
        writes.deferFromBatchSize = deferFromBatchSize
        writes.maxLagEvents = maxLagEvents
        writes.maxEntities = maxEntities
        return writes
    }

    /// `perOrigin` item edits from each origin over `items` items, each feed
    /// in seq order with growing times (the origins interleave), shuffled.
    static func itemBatch(
        origins: [String], perOrigin: Int, items: Int, seed: UInt64, firstSeq: UInt64 = 1
    ) -> [Event] {
        var rng = SplitMix64(seed: seed)
        var events: [Event] = []
        for (index, origin) in origins.enumerated() {
            for step in 0..<perOrigin {
                let seq = firstSeq + UInt64(step)
                events.append(
                    Fixtures.itemEvent(
                        origin, seq: seq, time: 1_000_000 + Int64(seq) * 10 + Int64(index),
                        item: "item-\(Int.random(in: 0..<items, using: &rng))", randomEdit(using: &rng),
                        eventID: randomUUID(using: &rng)))
            }
        }
        events.shuffle(using: &rng)
        return events
    }

    /// `count` events of one new origin: first late edits (sorting before
    /// everything in `targets`), then undos of events of `targets` and of
    /// earlier undos, then ordinary edits.
    static func undosAndLateEvents(targets: [Event], origin: String, count: Int, seed: UInt64) -> [Event] {
        var rng = SplitMix64(seed: seed)
        let newest = targets.map(\.timeMs).max() ?? 0
        var events: [Event] = []
        for index in 0..<count {
            let seq = UInt64(index + 1)
            let time = newest + 1 + Int64(index)
            let eventID = randomUUID(using: &rng)
            switch index {
            case 0..<40:
                let item = "item-\(index % 50)"
                events.append(
                    Fixtures.itemEvent(
                        origin, seq: seq, time: 500_000 + Int64(index), item: item, randomEdit(using: &rng),
                        eventID: eventID))
            case 40..<100:
                let target = targets.randomElement(using: &rng)!
                events.append(
                    Fixtures.rawEvent(
                        origin, seq: seq, time: time, entity: target.entityID,
                        payload: Fixtures.undonePayload(target.eventID), eventID: eventID))
            case 100..<115:
                // Undo an undo: the first target is restored.
                let target = events[Int.random(in: 40..<100, using: &rng)]
                events.append(
                    Fixtures.rawEvent(
                        origin, seq: seq, time: time, entity: target.entityID,
                        payload: Fixtures.undonePayload(target.eventID), eventID: eventID))
            default:
                events.append(
                    Fixtures.itemEvent(
                        origin, seq: seq, time: time, item: "item-\(Int.random(in: 0..<50, using: &rng))",
                        randomEdit(using: &rng), eventID: eventID))
            }
        }
        events.shuffle(using: &rng)
        return events
    }

    static func randomEdit(using rng: inout SplitMix64) -> ItemEvent {
        let names = ["Bolts", "Nuts", "Washers", "Screws", "Rivets"]
        switch Int.random(in: 0..<100, using: &rng) {
        case 0..<15: return .created(name: names.randomElement(using: &rng)!, quantity: .random(in: 0...9, using: &rng))
        case 15..<40: return .renamed(name: names.randomElement(using: &rng)!)
        case 40..<75: return .quantityChanged(quantity: .random(in: -3...500, using: &rng))
        default:
            return .noteChanged(note: Bool.random(using: &rng) ? nil : "note \(Int.random(in: 0...99, using: &rng))")
        }
    }

    static func randomUUID(using rng: inout SplitMix64) -> UUID {
        let bytes = withUnsafeBytes(of: (rng.next(), rng.next())) { Array($0) }
        return UUID(uuid: bytes.withUnsafeBytes { $0.loadUnaligned(as: uuid_t.self) })
    }
}

/// Random feeds from a few origins whose clocks disagree, replayable from
/// the seed: item edits, deletes, undos (of any feed's events, undos
/// included), poison payloads and events of a type no domain folds.
private struct RandomFeeds {
    var feeds: [[Event]]

    static let poisonPayload = #"{"type":"QuantityChanged","quantity":"many"}"#

    static func generate(using rng: inout SplitMix64, origins: Int, events: Int, items: Int) -> RandomFeeds {
        let offsets = (0..<origins).map { _ in Int64.random(in: -40_000...40_000, using: &rng) }
        var feeds = Array(repeating: [Event](), count: origins)
        var lastTime = Array(repeating: Int64.min, count: origins)
        var byItem: [String: [Event]] = [:]
        var trueTime: Int64 = 1_000_000
        for _ in 0..<events {
            trueTime += Int64.random(in: 0...25, using: &rng)
            let origin = Int.random(in: 0..<origins, using: &rng)
            let item = "item-\(Int.random(in: 0..<items, using: &rng))"
            var time = max(trueTime + offsets[origin], lastTime[origin])
            var entityType = Item.entityType
            var entityID = item
            let payload: String
            switch Int.random(in: 0..<100, using: &rng) {
            case 0..<9 where byItem[item] != nil:
                let target = byItem[item]!.randomElement(using: &rng)!
                time = max(time, target.timeMs + 1)
                payload = Fixtures.undonePayload(target.eventID)
            case 9..<11:
                payload = poisonPayload
            case 11..<14:
                entityType = "note"
                entityID = "note-\(Int.random(in: 0..<10, using: &rng))"
                payload = #"{"text":"n\#(Int.random(in: 0...99, using: &rng))","type":"Written"}"#
            case 14..<16:
                payload = ItemEvent.deleted.payload
            default:
                payload = DeferredProjectionTests.randomEdit(using: &rng).payload
            }
            lastTime[origin] = time
            let event = Event(
                eventID: DeferredProjectionTests.randomUUID(using: &rng),
                feed: FeedID(replicaID: "origin-\(origin)"), seq: UInt64(feeds[origin].count + 1), timeMs: time,
                entityType: entityType, entityID: entityID, payload: payload)
            feeds[origin].append(event)
            if entityType == Item.entityType { byItem[item, default: []].append(event) }
        }
        return RandomFeeds(feeds: feeds)
    }

    /// The feeds as batches: feeds interleaved at random, each in seq
    /// order, shuffled within a batch, sometimes with a repeat. About a
    /// third of the batches are large (some right at the 256 threshold).
    func batches(using rng: inout SplitMix64) -> [[Event]] {
        RandomDelivery.batches(of: feeds, using: &rng, repeatOneIn: 5) { rng in
            switch Int.random(in: 0..<100, using: &rng) {
            case 0..<5: 255
            case 5..<10: 256
            case 10..<35: Int.random(in: 257...700, using: &rng)
            default: Int.random(in: 1...12, using: &rng)
            }
        }
    }
}
