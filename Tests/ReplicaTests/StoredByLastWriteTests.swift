import Foundation
import TestSupport
import Testing

@testable import Replica

/// A log tells what its last write stored, so a writer can pass a few new
/// events on without reading them back.
@Suite("Stored by the last write")
struct StoredByLastWriteTests {
    let directory: TemporaryDirectory
    let clock = ManualClock(1_000)

    init() throws {
        directory = try TemporaryDirectory()
    }

    @Test("An append's events, in the order they were stored; a write that stores nothing names none")
    func anAppendsEvents() throws {
        let log = try EventLog.create(at: directory.path("a.db"), replicaID: "a", options: .testing(clock: clock))
        let stored = try log.append([
            NewEvent(item: "i1", .created(name: "Bolts", quantity: 5)),
            NewEvent(item: "i1", .quantityChanged(quantity: 7)),
        ])
        #expect(log.storedByLastWrite == stored)
        try log.ingest(stored.map(\.event))  // every event held already: a write that stores none
        #expect(log.storedByLastWrite == [])
    }

    @Test("An ingest past the limit names none; the next small write names its own")
    func aLargeWriteNamesNone() throws {
        let source = try EventLog.create(at: directory.path("s.db"), replicaID: "s", options: .testing(clock: clock))
        try source.append(
            (0..<(EventLog.storedByLastWriteLimit + 1)).map {
                NewEvent(item: "i\($0)", .created(name: "x", quantity: 1))
            })
        let log = try EventLog.create(at: directory.path("a.db"), replicaID: "a", options: .testing(clock: clock))
        try log.ingest(try source.events(after: 0, limit: 100).map(\.event))
        #expect(log.storedByLastWrite == nil)
        let one = try log.append(NewEvent(item: "j", .created(name: "y", quantity: 2)))
        #expect(log.storedByLastWrite == [one])
    }
}
