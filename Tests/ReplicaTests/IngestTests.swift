import Foundation
import TestSupport
import Testing

@testable import Replica

/// Ingesting events from other replicas: duplicates, gaps, forks, invalid events.
@Suite("Ingest")
struct IngestTests {
    let directory: TemporaryDirectory
    let clock = ManualClock(1_000_000)

    init() throws {
        directory = try TemporaryDirectory()
    }

    private func makeLog(_ name: String = "local") throws -> EventLog {
        try EventLog.create(at: directory.path("\(name).db"), replicaID: name, options: .testing(clock: clock))
    }

    private func feed(_ replicaID: String, count: UInt64, item: String = "i1") -> [Event] {
        (1...count).map { seq in
            seq == 1
                ? Fixtures.itemEvent(replicaID, seq: 1, time: 1_000, item: item, .created(name: "Bolts", quantity: 1))
                : Fixtures.itemEvent(
                    replicaID, seq: seq, time: 1_000 + Int64(seq), item: item, .quantityChanged(quantity: Int64(seq)))
        }
    }

    @Test("Re-ingesting the same batch reports duplicates and stores nothing")
    func reIngestIsIdempotent() throws {
        let log = try makeLog()
        let batch = feed("r1", count: 4)
        let first = try log.ingest(batch)
        let cursorAfterFirst = try log.cursor()
        let hashAfterFirst = try log.stateHash()

        let second = try log.ingest(batch)

        #expect(first.stored.count == 4)
        #expect(second.duplicates == batch.count)
        #expect(second.stored.isEmpty)
        #expect(second.isComplete)
        #expect(try log.cursor() == cursorAfterFirst)
        #expect(try log.eventCount() == 4)
        #expect(try log.stateHash() == hashAfterFirst)
    }

    @Test("A feed that skips a seq is stored up to the gap and reported")
    func gapIsRejected() throws {
        let log = try makeLog()
        let events = feed("r1", count: 4)

        let report = try log.ingest([events[0], events[1], events[3]])

        #expect(report.stored.map(\.event.seq) == [1, 2])
        #expect(report.gaps.count == 1)
        let gap = try #require(report.gaps.first)
        #expect(gap.feed == FeedID(replicaID: "r1"))
        #expect(gap.expectedSeq == 3)
        #expect(gap.offeredSeq == 4)
        #expect(gap.rejectedCount == 1)
        #expect(!report.isComplete)
        #expect(try log.cursor()[FeedID(replicaID: "r1")] == 2)
    }

    @Test("Sending the missing events later fills the gap")
    func gapIsFilledLater() throws {
        let log = try makeLog()
        let events = feed("r1", count: 4)
        try log.ingest([events[0], events[1], events[3]])

        let report = try log.ingest([events[2], events[3]])

        #expect(report.stored.map(\.event.seq) == [3, 4])
        #expect(report.isComplete)
        #expect(try log.cursor()[FeedID(replicaID: "r1")] == 4)
        #expect(try log.projection(Item.self, id: "i1")?.quantity == 4)
    }

    @Test("A different event in a held feed slot is quarantined as a fork")
    func forkIsQuarantined() throws {
        let log = try makeLog()
        let events = feed("r1", count: 2)
        try log.ingest(events)
        let itemBefore = try log.projection(Item.self, id: "i1")
        let hashBefore = try log.stateHash()
        let impostor = Fixtures.itemEvent("r1", seq: 2, time: 5_000, item: "i1", .quantityChanged(quantity: 666))

        let report = try log.ingest([impostor])

        #expect(
            report.forks == [
                Fork(
                    feed: FeedID(replicaID: "r1"), seq: 2, heldEventID: events[1].eventID,
                    offeredEventID: impostor.eventID)
            ])
        #expect(report.stored.isEmpty)
        let quarantined = try log.quarantined()
        #expect(quarantined.count == 1)
        #expect(quarantined.first?.reason == "fork")
        #expect(try log.forkCount() == 1)
        #expect(quarantined.first?.eventID == impostor.eventID.uuidString.lowercased())
        #expect(quarantined.first?.heldEventID == events[1].eventID.uuidString.lowercased())
        #expect(try log.events(after: 0, limit: 10).map(\.event) == events)
        #expect(try log.projection(Item.self, id: "i1") == itemBefore)
        #expect(try log.stateHash() == hashBefore)
    }

    @Test("A fork offered again is reported again but quarantined once")
    func repeatedForkIsQuarantinedOnce() throws {
        let log = try makeLog()
        try log.ingest(feed("r1", count: 1))
        let impostor = Fixtures.itemEvent("r1", seq: 1, time: 5_000, item: "i1", .deleted)

        let first = try log.ingest([impostor])
        let second = try log.ingest([impostor])

        #expect(first.forks.count == 1)
        #expect(second.forks.count == 1)
        #expect(try log.quarantined().count == 1)
        #expect(try log.eventCount() == 1)
    }

    @Test("The quarantined fork keeps the offered event in the documented JSON shape")
    func quarantinedForkKeepsTheOfferedEvent() throws {
        let log = try makeLog()
        try log.ingest(feed("r1", count: 1))
        let impostor = Fixtures.itemEvent("r1", seq: 1, time: 5_000, item: "i1", .deleted)

        try log.ingest([impostor])

        let held = try #require(try log.quarantined().first)
        #expect(try EventJSON.event(fromLine: held.eventJSON) == impostor)
    }

    @Test("An event whose payload is not a JSON object is quarantined as invalid")
    func payloadThatIsNotAnObjectIsInvalid() throws {
        let log = try makeLog()
        let good = feed("r2", count: 2, item: "i2")
        let bad = Fixtures.rawEvent("r1", seq: 1, time: 1_000, entity: "i1", payload: "[1,2,3]")

        let report = try log.ingest([bad] + good)

        #expect(report.invalid.count == 1)
        #expect(report.invalid.first?.feed == FeedID(replicaID: "r1"))
        #expect(report.invalid.first?.reason.contains("JSON object") == true)
        #expect(try log.quarantined().map(\.eventID) == [bad.eventID.uuidString.lowercased()])
        #expect(try log.quarantined().first?.reason.hasPrefix("invalid") == true)
        #expect(report.stored.map(\.event) == good)
        #expect(try log.cursor() == [FeedID(replicaID: "r2"): 2])
        #expect(try log.projection(Item.self, id: "i2")?.quantity == 2)
    }

    @Test("An event with seq 0 is quarantined as invalid and other feeds are stored")
    func seqZeroIsInvalid() throws {
        let log = try makeLog()
        let good = feed("r2", count: 2, item: "i2")
        let bad = Fixtures.itemEvent("r1", seq: 0, time: 1_000, item: "i1", .created(name: "Zero", quantity: 0))

        let report = try log.ingest(good + [bad])

        #expect(report.invalid.map(\.seq) == [0])
        #expect(report.invalid.first?.reason.contains("seq") == true)
        #expect(try log.quarantined().count == 1)
        #expect(report.stored.map(\.event) == good)
        #expect(try log.projection(Item.self, id: "i1") == nil)
        #expect(try log.projection(Item.self, id: "i2")?.quantity == 2)
    }

    @Test("Events of a feed before an invalid one are kept")
    func eventsBeforeAnInvalidOneAreKept() throws {
        let log = try makeLog()
        let good = feed("r1", count: 2)
        let bad = Fixtures.rawEvent("r1", seq: 3, time: 2_000, entity: "i1", payload: #""just a string""#)

        let report = try log.ingest(good + [bad])

        #expect(report.stored.map(\.event) == good)
        #expect(report.invalid.map(\.seq) == [3])
        #expect(try log.cursor()[FeedID(replicaID: "r1")] == 2)
    }

    @Test("Ingest reports every stored event with its local offset in arrival order")
    func reportListsStoredEventsInArrivalOrder() throws {
        let log = try makeLog()
        try log.append(NewEvent(item: "mine", .created(name: "Mine", quantity: 1)))

        let report = try log.ingest(feed("r1", count: 3))

        #expect(report.stored.map(\.offset) == [2, 3, 4])
        #expect(report.stored.allSatisfy { $0.arrivalTimeMs == clock.now })
        #expect(try log.events(after: 1, limit: 10) == report.stored)
    }
}
