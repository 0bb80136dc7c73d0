import Foundation
import TestSupport
import Testing

@testable import Replica

/// `EventLog.stateHash()`: its definition, byte for byte, and the hash the
/// log keeps while the database does not change.
@Suite("State hash")
struct StateHashTests {
    let directory: TemporaryDirectory
    let clock = ManualClock(1_000)

    init() throws {
        directory = try TemporaryDirectory()
    }

    private var path: String { directory.path("a.db") }

    /// A log with items of two remote feeds and one entity of a type no domain folds.
    private func populatedLog(events: Int) throws -> EventLog {
        let log = try EventLog.create(at: path, replicaID: "a", options: .testing(clock: clock))
        let batch = (1...events).map { (seq: Int) -> Event in
            let origin = seq % 2 == 0 ? "b" : "c"
            let event: ItemEvent =
                seq <= 40 ? .created(name: "Item \(seq) é", quantity: Int64(seq)) : .quantityChanged(quantity: 7)
            return Fixtures.itemEvent(
                origin, seq: UInt64((seq + 1) / 2), time: Int64(seq), item: "i\(seq % 40)", event)
        }
        try log.append(NewEvent(entityType: "pallet", entityID: "p1", payload: #"{"type":"Moved"}"#))
        try log.ingest(batch)
        return log
    }

    @Test("The hash is SHA-256 of `type 0x00 id 0x00 state 0x0A` per folded entity in byte order, pending rows too")
    func definitionByteForByte() throws {
        let log = try populatedLog(events: 300)
        let newest = try log.lastOffset()
        // 300 events in one batch leave their projection rows pending in memory.
        #expect(try RawSQL.projectedOffset(path) ?? 0 < newest)
        let hash = try log.stateHash()
        try log.writePendingProjections()
        #expect(try RawSQL.projectedOffset(path) == newest)

        // The documented bytes, built from the rows as the sqlite3 tool shows them.
        let rows = try RawSQL.rows(path, "SELECT entity_type, entity_id, state FROM entities WHERE state IS NOT NULL") {
            (type: $0.text(0), id: $0.text(1), state: $0.text(2))
        }.sorted { ($0.type + "\u{0}" + $0.id).utf8.lexicographicallyPrecedes(($1.type + "\u{0}" + $1.id).utf8) }
        #expect(rows.count == 40)
        var bytes: [UInt8] = []
        for row in rows {
            bytes += Array(row.type.utf8) + [0] + Array(row.id.utf8) + [0] + Array(row.state.utf8) + [0x0A]
        }
        let file = directory.path("hashed-bytes")
        try Data(bytes).write(to: URL(fileURLWithPath: file))
        let sha256sum = try SHA256Tests.run("/usr/bin/sha256sum", [file])
        #expect(hash == String(sha256sum.prefix(64)))
        #expect(try log.stateHash() == hash)
    }

    @Test("A hash kept from before is not reused once another connection commits")
    func keptHashEndsWithAnotherConnectionsCommit() throws {
        let log = try populatedLog(events: 50)
        let before = try log.stateHash()
        #expect(try log.stateHash() == before)

        let other = try EventLog.open(at: path, options: .testing(clock: clock))
        try other.append(NewEvent(item: "i3", .renamed(name: "Renamed elsewhere")))
        let after = try log.stateHash()
        #expect(after != before)
        #expect(after == (try other.stateHash()))
    }

    @Test("A projection row changed with plain SQL changes the hash at once")
    func keptHashEndsWithAPlainSQLCommit() throws {
        let log = try populatedLog(events: 50)
        try log.writePendingProjections()
        let before = try log.stateHash()
        try RawSQL.execute(path, #"UPDATE entities SET state = '{"edited":true}' WHERE entity_id = 'i1'"#)
        #expect(try log.stateHash() != before)
    }
}
