import Foundation
import TestSupport
import Testing

@testable import Replica

/// The hybrid logical clock, pure and through the event log.
@Suite("Hybrid clock")
struct HybridClockTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory()
    }

    @Test("Tick follows the wall clock when it is ahead")
    func tickFollowsWallClock() {
        var clock = HybridClock(lastMs: 1_000)
        #expect(clock.tick(wallMs: 5_000) == 5_000)
        #expect(clock.lastMs == 5_000)
    }

    @Test("Tick still moves forward when the wall clock is behind")
    func tickMovesForwardWithWallClockBehind() {
        var clock = HybridClock(lastMs: 10_000)
        let first = clock.tick(wallMs: 2_000)
        let second = clock.tick(wallMs: 2_000)
        #expect(first == 10_001)
        #expect(second == 10_002)
    }

    @Test("Observing a remote time within the skew moves the clock")
    func observeWithinSkewMovesClock() {
        var clock = HybridClock(lastMs: 1_000, maxSkewMs: 60_000)
        let skew = clock.observe(remoteMs: 50_000, wallMs: 1_000)
        #expect(skew == 0)
        #expect(clock.lastMs == 50_000)
        #expect(clock.tick(wallMs: 1_000) == 50_001)
    }

    @Test("Observing an older remote time leaves the clock alone")
    func observeOlderTimeKeepsClock() {
        var clock = HybridClock(lastMs: 9_000)
        #expect(clock.observe(remoteMs: 3_000, wallMs: 9_000) == 0)
        #expect(clock.lastMs == 9_000)
    }

    @Test("A remote time beyond the skew is reported and does not move the clock")
    func observeBeyondSkewIsReported() {
        var clock = HybridClock(lastMs: 1_000, maxSkewMs: 60_000)
        let skew = clock.observe(remoteMs: 100_000, wallMs: 1_000)
        #expect(skew == 99_000)
        #expect(clock.lastMs == 1_000)
        #expect(clock.tick(wallMs: 1_000) == 1_001)
    }

    @Test("Observing the most negative remote time leaves the clock alone instead of trapping")
    func observeMostNegativeTime() async {
        // `remoteMs - wallMs` overflows; a child process keeps a trap from ending the run.
        await #expect(processExitsWith: .success) {
            var clock = HybridClock(lastMs: 1_000)
            let skew = clock.observe(remoteMs: .min, wallMs: 1_700_000_000_000)
            guard skew == 0, clock.lastMs == 1_000 else { exit(1) }
        }
    }

    @Test("The default tolerated skew is 24 hours")
    func defaultSkewIsOneDay() {
        #expect(HybridClock().maxSkewMs == 86_400_000)
        #expect(EventLog.Options().maxClockSkewMs == 86_400_000)
    }

    @Test("A replica whose clock is behind appends after an event it has seen, so its edit wins")
    func editAfterSeeingSortsAfter() throws {
        let aheadClock = ManualClock(50_000)
        let behindClock = ManualClock(1_000)
        let ahead = try EventLog.create(
            at: directory.path("ahead.db"), replicaID: "ahead", options: .testing(clock: aheadClock))
        let behind = try EventLog.create(
            at: directory.path("behind.db"), replicaID: "behind", options: .testing(clock: behindClock))
        let seen = try ahead.append(NewEvent(item: "i1", .created(name: "Ahead", quantity: 1)))
        try behind.ingest([seen.event])

        let edit = try behind.append(NewEvent(item: "i1", .renamed(name: "Behind")))
        try ahead.ingest([edit.event])

        #expect(edit.event.orderKey > seen.event.orderKey)
        #expect(edit.event.timeMs == 50_001)
        #expect(try behind.projection(Item.self, id: "i1")?.name == "Behind")
        #expect(try ahead.projection(Item.self, id: "i1")?.name == "Behind")
    }

    @Test("An event more than 24 hours ahead is reported and does not drag the local clock")
    func farAheadEventIsReportedAndIgnoredByClock() throws {
        let hour: Int64 = 60 * 60 * 1000
        let wall = ManualClock(1_700_000_000_000)
        let log = try EventLog.create(at: directory.path("a.db"), replicaID: "a", options: .testing(clock: wall))
        let future = Fixtures.itemEvent(
            "liar", seq: 1, time: wall.now + 30 * hour, item: "i1", .created(name: "Future", quantity: 1))

        let report = try log.ingest([future])
        let next = try log.append(NewEvent(item: "i2", .created(name: "Now", quantity: 1)))

        #expect(report.clockSkewMs == ["liar": 30 * hour])
        #expect(report.stored.count == 1)
        #expect(next.event.timeMs == wall.now)
        #expect(try log.projection(Item.self, id: "i1")?.name == "Future")
    }

    @Test("An event ahead but within the skew is not reported and moves the local clock")
    func aheadWithinSkewMovesClock() throws {
        let hour: Int64 = 60 * 60 * 1000
        let wall = ManualClock(1_700_000_000_000)
        let log = try EventLog.create(at: directory.path("a.db"), replicaID: "a", options: .testing(clock: wall))
        let soon = Fixtures.itemEvent("peer", seq: 1, time: wall.now + 2 * hour, item: "i1", .deleted)

        let report = try log.ingest([soon])
        let next = try log.append(NewEvent(item: "i2", .created(name: "Now", quantity: 1)))

        #expect(report.clockSkewMs.isEmpty)
        #expect(next.event.timeMs == soon.timeMs + 1)
    }

    @Test("The clock survives reopening the log")
    func clockIsDurable() throws {
        let wall = ManualClock(5_000)
        let path = directory.path("a.db")
        do {
            let log = try EventLog.create(at: path, replicaID: "a", options: .testing(clock: wall))
            try log.append(NewEvent(item: "i1", .created(name: "Bolts", quantity: 1)))
        }
        wall.set(100)

        let reopened = try EventLog.open(at: path, options: .testing(clock: wall))
        let next = try reopened.append(NewEvent(item: "i1", .quantityChanged(quantity: 2)))

        #expect(next.event.timeMs == 5_001)
    }
}
