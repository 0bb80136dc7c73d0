import Foundation
import Testing

@testable import Replica

/// The writer's caches are bounded by count, so a log's memory does not grow
/// with the number of its entities (docs/storage.md "Memory").
@Suite("Memory bounds")
struct MemoryBoundTests {
    private func key(_ index: Int) -> EntityKey { EntityKey(type: "item", id: "i\(index)") }

    @Test("Interned entity ids stop at the limit and start afresh")
    func internedIDsAreBounded() {
        var interned = InternedIDs()
        for index in 0..<(InternedIDs.entityLimit + 10) {
            interned.intern(key(index), as: Int64(index + 1))
            #expect(interned.entities.count <= InternedIDs.entityLimit)
        }
        // The newest ids are held; the ones before the fresh start are read again when asked.
        #expect(interned.entities.count == 10)
        #expect(interned.entities[key(InternedIDs.entityLimit + 9)] == Int64(InternedIDs.entityLimit + 10))
        #expect(interned.entities[key(0)] == nil)
    }

    @Test("Written rows hold at most two generations")
    func writtenRowsAreBounded() {
        var rows = WrittenRows()
        let entry = WrittenRows.Entry(
            stateJSON: "{}", state: 0, lastKey: EventOrderKey(timeMs: 1, seq: 1, eventID: UUID.random()),
            lastOffset: 1, holder: nil)
        let stored = 3 * WrittenRows.generationLimit
        for row in 1...Int64(stored) { rows.store(entry, for: row) }
        let held = (1...Int64(stored)).filter { rows.entry($0) != nil }.count
        #expect(held <= 2 * WrittenRows.generationLimit)
        #expect(rows.entry(Int64(stored)) != nil)
        #expect(rows.entry(1) == nil)
    }
}
