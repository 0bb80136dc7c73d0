import Foundation
import TestSupport
import Testing

@testable import Replica

/// Block rows (docs/storage.md "Block rows"): a long run of one feed in an
/// ingest is stored as `event_blocks` rows, and every read answers as if
/// each event were a row. Each test compares a log that got the events in
/// large batches (blocks) with one that got them in batches of a few (rows).
@Suite("Block rows")
struct BlockStorageTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory()
    }

    @Test("A long feed run is stored as blocks of at most 32 events, a short one as rows")
    func longRunsBecomeBlocks() throws {
        let batch = DeferredProjectionTests.itemBatch(origins: ["r1", "r2"], perOrigin: 1_500, items: 60, seed: 3)
        let blocks = try makeLog("blocks")
        try blocks.ingest(batch)

        #expect(try RawSQL.int(blocks.path, "SELECT count(*) FROM events") == 0)
        #expect(
            try RawSQL.rows(
                blocks.path, "SELECT last_offset - first_offset + 1 FROM event_blocks ORDER BY first_offset"
            ) { $0.int64(0) } == Array(repeating: 32, count: 46) + [28] + Array(repeating: 32, count: 46) + [28])
        #expect(try RawSQL.int(blocks.path, "SELECT count(*) FROM event_log") == 3_000)

        // A live push (a batch of one) and a short run stay rows.
        let live = Fixtures.itemEvent("r1", seq: 1_501, time: 9_000_000, item: "item-1", .quantityChanged(quantity: 2))
        let short = (1...10).map {
            Fixtures.itemEvent(
                "r3", seq: UInt64($0), time: 9_000_000 + Int64($0), item: "item-2", .renamed(name: "r\($0)"))
        }
        try blocks.ingest([live])
        try blocks.ingest(short)
        #expect(try RawSQL.int(blocks.path, "SELECT count(*) FROM events") == 11)
        #expect(try RawSQL.int(blocks.path, "SELECT count(*) FROM event_blocks") == 94)
        #expect(try blocks.eventCount() == 3_011)
        #expect(try blocks.lastOffset() == 3_011)
    }

    @Test("Every read answers the same from blocks as from rows")
    func readsAgreeWithRows() throws {
        let batch = DeferredProjectionTests.itemBatch(origins: ["r1", "r2", "r3"], perOrigin: 700, items: 80, seed: 5)
        let blocks = try makeLog("blocks")
        let rows = try makeLog("rows")
        try blocks.ingest(batch)
        let inTimeOrder = batch.sorted { $0.timeMs < $1.timeMs }
        for start in stride(from: 0, to: batch.count, by: 20) {
            try rows.ingest(Array(inTimeOrder[start..<min(start + 20, batch.count)]))
        }
        #expect(try RawSQL.int(rows.path, "SELECT count(*) FROM event_blocks") == 0)
        #expect(try RawSQL.int(blocks.path, "SELECT count(*) FROM events") == 0)

        try expectSameState(blocks, rows, "after the ingest")
        #expect(try blocks.cursor() == (try rows.cursor()))
        #expect(try blocks.eventCount() == (try rows.eventCount()))
        // Offsets differ with the order of storing; what each feed holds at each seq does not.
        let feed = FeedID(replicaID: "r2")
        #expect(
            try blocks.events(in: feed, seqs: 1...700, limit: 10_000).map(\.event)
                == (try rows.events(in: feed, seqs: 1...700, limit: 10_000).map(\.event)))
        #expect(
            try blocks.events(in: feed, seqs: 1_000...1_030, limit: 5).map(\.event)
                == (try rows.events(in: feed, seqs: 1_000...1_030, limit: 5).map(\.event)))
        #expect(
            try blocks.events(in: feed, seqs: 1_020...1_030, limit: 5).map(\.event.seq) == [])
        #expect(try blocks.events(in: feed, seqs: 650...660, limit: 5).map(\.event.seq) == [650, 651, 652, 653, 654])
        // Paging in arrival order reads every event once, pages across block edges included.
        var paged: [StoredEvent] = []
        try blocks.forEachEventPage(pageSize: 333) { paged += $0 }
        #expect(paged.map(\.offset) == Array(1...2_100))
        #expect(Set(paged.map(\.event)) == Set(batch))
        #expect(try blocks.events(after: 1_020, limit: 10).map(\.offset) == Array(1_021...1_030))
        #expect(try blocks.events(after: 30, limit: 20).map(\.offset) == Array(31...50))
        // What a peer is sent and what it folds.
        try expectSamePages(blocks, rows, for: VectorCursor())
        try expectSamePages(blocks, rows, for: [feed: 333, FeedID(replicaID: "r1"): 699])
        for item in ["item-0", "item-33", "item-79"] {
            #expect(
                try blocks.events(entityType: Item.entityType, entityID: item).map(\.event)
                    == (try rows.events(entityType: Item.entityType, entityID: item).map(\.event)))
        }
        #expect(try blocks.checkIntegrity(refold: true).findings.map(\.description) == [])
    }

    @Test("Events held in blocks are recognised as duplicates, and a different event at their slot as a fork")
    func duplicatesAndForksAgainstBlocks() throws {
        let batch = DeferredProjectionTests.itemBatch(origins: ["r1"], perOrigin: 300, items: 20, seed: 9)
        let log = try makeLog("blocks")
        try log.ingest(batch)
        let again = try log.ingest(batch)
        #expect(again.duplicates == 300)
        #expect(again.stored.isEmpty)

        let held = batch.first { $0.seq == 120 }!
        var forged = held
        forged.eventID = UUID()
        let report = try log.ingest([forged])
        #expect(report.forks.map(\.heldEventID) == [held.eventID])
        #expect(try log.forkCount() == 1)
        #expect(try log.eventCount() == 300)

        // The same id again in another feed, as a row: the check names both places.
        var copy = held
        copy.feed = FeedID(replicaID: "r2")
        copy.seq = 1
        try log.ingest([copy])
        let repeated = try log.checkIntegrity().findings.filter { $0.kind == .duplicateEventID }
        #expect(repeated.count == 1)
        #expect(repeated.first?.description.contains("stored 2 times") == true, "\(repeated)")
        #expect(repeated.first?.description.contains("feed r2/default seq 1") == true, "\(repeated)")
    }

    @Test("Undos, late events and local writes on entities whose history is in blocks fold as with rows")
    func mixedHistoriesFoldAsWithRows() throws {
        let first = DeferredProjectionTests.itemBatch(origins: ["r1", "r2"], perOrigin: 400, items: 50, seed: 11)
        let later = DeferredProjectionTests.undosAndLateEvents(targets: first, origin: "r9", count: 200, seed: 12)
        let blocks = try makeLog("blocks")
        let rows = try makeLog("rows")
        try blocks.ingest(first)
        try blocks.ingest(later)
        for event in first.sorted(by: { $0.timeMs < $1.timeMs }) + later.sorted(by: { $0.seq < $1.seq }) {
            try rows.ingest([event])
        }
        // Local appends and undos land as rows beside the blocks.
        for log in [blocks, rows] {
            try log.append(NewEvent(item: "item-3", .quantityChanged(quantity: 5)))
            try log.undo(entityType: Item.entityType, entityID: "item-4")
        }
        #expect(try RawSQL.int(blocks.path, "SELECT count(*) FROM event_blocks") == 33)
        #expect(try RawSQL.int(blocks.path, "SELECT count(*) FROM events") == 2)
        #expect(try blocks.projections(Item.self) == (try rows.projections(Item.self)))
        #expect(try blocks.poisonEventCount() == (try rows.poisonEventCount()))
        #expect(try RawSQL.chainProblems(blocks.path, checkHeads: false) == [])

        // Reopened, the file alone gives the same state; written out, so do its rows.
        let reopened = try EventLog.open(at: blocks.path)
        #expect(try reopened.projections(Item.self) == (try rows.projections(Item.self)))
        try reopened.writePendingProjections()
        try rows.writePendingProjections()
        #expect(try RawSQL.items(reopened.path) == (try RawSQL.items(rows.path)))
        #expect(try RawSQL.chainProblems(reopened.path, checkHeads: true) == [])
        #expect(try reopened.checkIntegrity(refold: true).findings.map(\.description) == [])
    }

    @Test("The stock sqlite3 reads block events through event_log, column for column as rows")
    func eventLogViewShowsBlocks() throws {
        let batch = DeferredProjectionTests.itemBatch(origins: ["r1", "r2"], perOrigin: 200, items: 30, seed: 13)
        let blocks = try makeLog("blocks")
        let rows = try makeLog("rows")
        try blocks.ingest(batch)
        for event in batch.sorted(by: { $0.timeMs < $1.timeMs }) { try rows.ingest([event]) }
        let columns = "event_id, replica_id, scope, seq, time_ms, entity_type, entity_id, payload"
        let select = "SELECT \(columns) FROM event_log ORDER BY replica_id, seq"
        let fromBlocks = try Executables.runSystem("sqlite3", ["-readonly", blocks.path, select])
        let fromRows = try Executables.runSystem("sqlite3", ["-readonly", rows.path, select])
        #expect(fromBlocks.status == 0)
        #expect(fromBlocks.stdout.split(separator: "\n").count == 400)
        #expect(fromBlocks.stdout == fromRows.stdout)
    }

    @Test("Thin-client feeds are never stored as blocks")
    func thinClientFeedsStayRows() throws {
        let feed = FeedID(thinClient: "phone", node: "relay-1")
        let batch = (1...100).map {
            Event(
                eventID: UUID(), feed: feed, seq: UInt64($0), timeMs: 1_000 + Int64($0), entityType: Item.entityType,
                entityID: "0b6e4f7c-0000-4000-8000-00000000000\($0 % 10)",
                payload: ItemEvent.renamed(name: "n\($0)").payload)
        }
        let log = try makeLog("relay-2", replicaID: "relay-2")
        try log.ingest(batch)
        #expect(try RawSQL.int(log.path, "SELECT count(*) FROM event_blocks") == 0)
        #expect(
            try RawSQL.int(
                log.path,
                "SELECT (SELECT count(*) FROM thin_client_recent) + (SELECT count(*) FROM thin_client_events)") == 100)
    }

    @Test("A damaged block is reported by the check and refused by reads, never read as fewer events")
    func damagedBlockIsReported() throws {
        let batch = DeferredProjectionTests.itemBatch(origins: ["r1"], perOrigin: 200, items: 10, seed: 17)
        let log = try makeLog("blocks")
        try log.ingest(batch)
        try log.writePendingProjections()
        try RawSQL.execute(log.path, "UPDATE event_blocks SET events = '[[\"not an event\"]]'")

        let reopened = try EventLog.open(at: log.path)
        let findings = try reopened.checkIntegrity().findings
        #expect(findings.contains { $0.kind == .damaged && $0.description.contains("block at offset 1 ") })
        #expect(throws: EventLogError.self) { try reopened.events(after: 0, limit: 10) }
        #expect(throws: EventLogError.self) { try reopened.events(in: FeedID(replicaID: "r1"), seqs: 5...9, limit: 5) }

        try RawSQL.execute(log.path, "UPDATE event_blocks SET events = 'not json'")
        let unreadable = try EventLog.open(at: log.path).checkIntegrity().findings
        #expect(unreadable.contains { $0.kind == .damaged && $0.description.contains("block at offset 1 ") })
    }

    @Test("Block text round-trips ids and types that need escapes, through the fast and the general reader")
    func blockTextRoundTrips() throws {
        let entries = [
            EventBlock.Entry(
                eventID: UUID(), timeMs: 1_700_000_000_000, entityRow: 7, entityType: "item", entityID: "plain",
                entityPrev: nil, payload: #"{"name":"Bolts","type":"Created"}"#),
            EventBlock.Entry(
                eventID: UUID(), timeMs: -5, entityRow: 8, entityType: "note \"quoted\"", entityID: "tab\there/ü",
                entityPrev: 3, payload: #"{"text":"a \"b\" ü","type":"Noted"}"#),
        ]
        let text = EventBlock.text(of: entries)
        let read = try #require(EventBlock.entries(of: text))
        #expect(read.map(\.eventID) == entries.map(\.eventID))
        #expect(read.map(\.entityID) == entries.map(\.entityID))
        #expect(read.map(\.entityType) == entries.map(\.entityType))
        #expect(read.map(\.entityPrev) == entries.map(\.entityPrev))
        #expect(read.map(\.payload) == entries.map(\.payload))
        #expect(read.map(\.timeMs) == entries.map(\.timeMs))
        // The text is exactly the documented shape (docs/storage.md "Block rows").
        let id = entries[0].eventID.lowercased
        let edge = EventBlock.Entry(
            eventID: entries[0].eventID, timeMs: Int64.min, entityRow: Int64.max, entityType: "t", entityID: "i",
            entityPrev: 0, payload: "{}")
        #expect(
            EventBlock.text(of: [entries[0], edge])
                == #"[[""# + id + #"",1700000000000,7,"item","plain",null,{"name":"Bolts","type":"Created"}],"#
                + #"[""# + id + #"",-9223372036854775808,9223372036854775807,"t","i",0,{}]]"#)
        #expect(EventBlock.entries(of: EventBlock.text(of: [edge]))?.first?.timeMs == Int64.min)
        // Only the first entry is in the fast reader's shape.
        let plain = try #require(EventBlock.entries(of: EventBlock.text(of: [entries[0]])))
        #expect(plain.map(\.payload) == [entries[0].payload])
        // Entries are found by brackets outside strings, escapes and all.
        var bracketed = entries
        bracketed[0].entityID = "a[b]{"
        bracketed[1].payload = #"{"text":"]\"[","type":"Noted"}"#
        let bracketedText = Array(EventBlock.text(of: bracketed).utf8)
        let starts = try #require(bracketedText.withUnsafeBufferPointer { EventBlock.entryStarts(in: $0) })
        #expect(starts.count == 2)
        #expect(starts.allSatisfy { bracketedText[$0] == UInt8(ascii: "[") })
        #expect(
            bracketedText.withUnsafeBufferPointer { EventBlock.entry(in: $0, from: starts[0]) }?.entityID == "a[b]{")
        for broken in ["[[1],", "[[1]]]", "[{}]", "[[\"]]", "x"] {
            #expect(Array(broken.utf8).withUnsafeBufferPointer { EventBlock.entryStarts(in: $0) } == nil, "\(broken)")
        }
        #expect(EventBlock.entries(of: "[[1,2]]") == nil)
        #expect(EventBlock.entries(of: "") == nil)
    }

    // MARK: - Helpers

    /// A log whose wall clock stands still, so that local writes on two logs get the same times.
    private func makeLog(_ name: String, replicaID: String = "local") throws -> EventLog {
        var options = EventLog.Options()
        options.wallClock = { 5_000_000_000 }
        return try EventLog.create(at: directory.path("\(name).db"), replicaID: replicaID, options: options)
    }

    /// Expects both logs to send a peer with `cursor` the same pages.
    private func expectSamePages(
        _ log: EventLog, _ reference: EventLog, for cursor: VectorCursor,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        var pages = try log.missingEventPages(for: cursor, maxEvents: 250)
        var expected = try reference.missingEventPages(for: cursor, maxEvents: 250)
        while let page = try expected.next() {
            #expect(try pages.next() == page, sourceLocation: sourceLocation)
        }
        #expect(try pages.next() == nil, sourceLocation: sourceLocation)
    }
}
