import Foundation
import TestSupport
import Testing

@testable import Replica

/// A log's history floor (docs/storage.md "Dropping history", "Rebasing
/// onto a checkpoint"): what it holds after a start, a drop or a move onto
/// a checkpoint, how chains are relinked, and what a later checkpoint takes.
@Suite("History floor")
struct HistoryFloorTests {
    let directory: TemporaryDirectory
    let clock = ManualClock(1_000)

    init() throws { directory = try TemporaryDirectory() }

    private func makeLog(_ name: String) throws -> EventLog {
        try EventLog.create(at: directory.path("\(name).db"), replicaID: name, options: .testing(clock: clock))
    }

    /// `count` appends on `log` over `items` items: created, then edited, one deleted now and then.
    private func write(_ count: Int, on log: EventLog, items: Int = 8, prefix: String = "item") throws {
        for index in 0..<count {
            clock.advance(by: 1)
            let item = "\(prefix)-\(index % items)"
            let event: ItemEvent =
                index < items
                ? .created(name: "n\(index)", quantity: Int64(index)) : .quantityChanged(quantity: Int64(index))
            try log.append(NewEvent(item: item, event))
        }
    }

    /// Every event of `log` after `offset`, in arrival order.
    private func events(of log: EventLog, after offset: Int64 = 0) throws -> [Event] {
        try log.events(after: offset, limit: 100_000).map(\.event)
    }

    /// A checkpoint of `log` at its cursor, taken by it.
    @discardableResult
    private func checkpoint(_ log: EventLog) throws -> CheckpointContent {
        let content = try log.makeCheckpoint()
        _ = try log.take(content, statement: content.encoded)
        return content
    }

    private func bases(of log: EventLog) throws -> [EntityBase] {
        var pages = log.checkpointBasePages()
        var all: [EntityBase] = []
        while let page = try pages.next() { all += page }
        return all
    }

    @Test("dropping history cut inside a block relinks every chain: the log checks clean and folds as before")
    func dropRelinksChainsThroughBlocks() throws {
        let source = try makeLog("a")
        try write(150, on: source)
        let all = try events(of: source)
        // c holds the first 80 events (as blocks) and makes the checkpoint there;
        // b holds all 150 as blocks of 32, one of them reaching past seq 80.
        let maker = try makeLog("c")
        _ = try maker.ingest(Array(all.prefix(80)))
        let content = try checkpoint(maker)
        let log = try makeLog("b")
        _ = try log.ingest(all)
        #expect(try log.take(content, statement: content.encoded) == .taken(refolded: 8))
        let hash = try log.stateHash()
        let dropped = try log.dropCoveredHistory()
        #expect(dropped.events == 64)  // the block of seqs 65…96 stays whole
        #expect(try log.checkIntegrity(refold: true).findings.isEmpty)
        #expect(try log.stateHash() == hash)
        // A later event of an item whose chain runs through the kept block folds on top of it.
        let more = try log.append(NewEvent(item: "item-3", .quantityChanged(quantity: 999)))
        _ = try source.ingest([more.event])
        #expect(try log.stateHash() == source.stateHash())
        #expect(try log.checkIntegrity(refold: true).findings.isEmpty)
    }

    @Test("a log that started from one checkpoint and took the next holds and links the events between, and drops them")
    func startedThenTook() throws {
        let source = try makeLog("a")
        try write(40, on: source)
        let first = try checkpoint(source)
        let log = try makeLog("d")
        try log.start(from: first, statement: first.encoded, bases: try bases(of: source))
        try write(20, on: source)
        _ = try log.ingest(try events(of: source).filter { !first.covers($0) })
        let second = try checkpoint(source)
        _ = try log.take(second, statement: second.encoded)
        let held = try #require(try log.checkpoint())
        #expect(held.content.id == second.id)
        #expect(held.floor?.id == first.id)
        #expect(!held.historyHeld && !held.historyDropped)
        // The link at a seq between the two checkpoints starts from the floor's.
        let feed = FeedID(replicaID: "a")
        #expect(try log.chainHead(of: feed, at: 50).link == source.chainHead(of: feed, at: 50).link)
        let dropped = try log.dropCoveredHistory()
        #expect(dropped.events == 20)
        #expect(try log.checkpoint()?.floor?.id == second.id)
        #expect(try log.checkpoint()?.historyDropped == true)
        #expect(try log.eventCount() == 0)
        #expect(try log.stateHash() == source.stateHash())
        #expect(try log.checkIntegrity(refold: true).findings.isEmpty)
    }

    @Test("a log moved onto a checkpoint keeps the events it does not cover and folds like its maker")
    func rebaseKeepsWhatTheCheckpointDoesNotCover() throws {
        let source = try makeLog("a")
        try write(60, on: source)
        let log = try makeLog("b")
        _ = try log.ingest(Array(try events(of: source).prefix(30)))
        try write(5, on: log, items: 2, prefix: "own")
        let content = try checkpoint(source)
        _ = try source.dropCoveredHistory()
        try write(10, on: source)  // the tail after the checkpoint
        let refolded = try log.rebase(onto: content, statement: content.encoded, bases: try bases(of: source))
        #expect(refolded == 2)  // b's own items, on top of no base
        let held = try #require(try log.checkpoint())
        #expect(held.content.id == content.id && held.historyDropped)
        #expect(try log.eventCount() == 5)  // the 30 covered events went; b's own stayed
        #expect(try log.cursor()[FeedID(replicaID: "a")] == 60)
        #expect(try log.rebase(onto: content, statement: content.encoded, bases: []) == 0)  // taken already
        // The tail comes on top, b's own events go to a: both show one state.
        _ = try log.ingest(try events(of: source))
        _ = try source.ingest(try events(of: log).filter { $0.feed.replicaID == "b" })
        #expect(try log.stateHash() == source.stateHash())
        #expect(try log.checkIntegrity(refold: true).findings.isEmpty)
        // New events never reuse the offsets of the events that went.
        let next = try log.append(NewEvent(item: "own-0", .quantityChanged(quantity: 1)))
        #expect(next.offset > 35)
    }

    @Test("bases that do not match the checkpoint leave the log as it was")
    func rebaseWithForgedBasesChangesNothing() throws {
        let source = try makeLog("a")
        try write(30, on: source)
        let log = try makeLog("b")
        _ = try log.ingest(Array(try events(of: source).prefix(10)))
        let content = try checkpoint(source)
        var forged = try bases(of: source)
        forged[0].state = #"{"deleted":false,"id":"item-0","name":"forged","quantity":1}"#
        let hash = try log.stateHash()
        #expect(throws: CheckpointError.self) {
            try log.rebase(onto: content, statement: content.encoded, bases: forged)
        }
        #expect(try log.stateHash() == hash)
        #expect(try log.eventCount() == 10)
        #expect(try log.checkpoint() == nil)
    }
}
