import Foundation
import TestSupport
import Testing

@testable import Replica

/// Ingest of events that are legal on the wire but unusual: extreme times,
/// non-canonical payloads, identifiers that differ only in Unicode form.
@Suite("Ingest hardening")
struct IngestHardeningTests {
    let directory: TemporaryDirectory
    let clock = ManualClock(1_700_000_000_000)

    init() throws {
        directory = try TemporaryDirectory()
    }

    private func makeLog(_ name: String = "local") throws -> EventLog {
        try EventLog.create(at: directory.path("\(name).db"), replicaID: name, options: .testing(clock: clock))
    }

    /// "café" with a precomposed é, and with e + combining acute accent.
    /// Swift's `==` calls them equal; SQLite's TEXT keys and every other
    /// replica's bytes do not.
    private static let composed = "caf\u{E9}"
    private static let decomposed = "cafe\u{301}"

    @Test("An event with the most negative time is stored, not a crash")
    func mostNegativeTimeDoesNotTrap() async {
        // HybridClock.observe computes `remoteMs - wallMs`, which overflows
        // for Int64.min; run it in a child process so a trap fails only this test.
        await #expect(processExitsWith: .success) {
            // In memory: a child that traps leaves no files behind.
            let log = try EventLog.create(at: ":memory:", replicaID: "a")
            let event = Fixtures.itemEvent("peer", seq: 1, time: .min, item: "i1", .created(name: "Old", quantity: 1))
            let report = try log.ingest([event])
            guard report.stored.count == 1 || report.invalid.count == 1 else { exit(1) }
        }
    }

    @Test("A JSON line with the most negative time can be imported, not a crash")
    func importedMostNegativeTimeDoesNotTrap() async {
        await #expect(processExitsWith: .success) {
            let line = """
                {"replica_event_id":"6f1c2a9e-3b4d-4e5f-8a7b-0c1d2e3f4a5b","replica_id":"peer","scope":"default",\
                "replica_write_offset":1,"replica_time_ms":-9223372036854775808,"entity_type":"item",\
                "entity_id":"i1","payload":{"type":"Deleted"}}
                """
            // In memory: a child that traps leaves no files behind.
            let log = try EventLog.create(at: ":memory:", replicaID: "a")
            _ = try log.ingest([try EventJSON.event(fromLine: line)])
        }
    }

    @Test("An ingested payload with whitespace still exports as one line")
    func nonCanonicalPayloadExportsOnOneLine() throws {
        let log = try makeLog()
        let spaced = Fixtures.rawEvent("peer", seq: 1, time: 1_000, entity: "i1", payload: "{\"type\":\n  \"Deleted\"}")

        let report = try log.ingest([spaced])

        let stored = try #require(report.stored.first)
        let line = EventJSON.line(for: stored)
        #expect(!line.contains("\n"), "export line: \(line)")
        #expect(try EventJSON.event(fromLine: line).eventID == spaced.eventID)
    }

    @Test("Entity ids that differ only in Unicode normalization stay distinct entities")
    func entityIDsAreComparedByBytes() throws {
        let log = try makeLog()
        try log.ingest([
            Fixtures.itemEvent("r1", seq: 1, time: 1_000, item: Self.composed, .created(name: "Composed", quantity: 1)),
            Fixtures.itemEvent(
                "r2", seq: 1, time: 1_000, item: Self.decomposed, .created(name: "Decomposed", quantity: 2)),
        ])

        let items = try log.projections(Item.self)
        #expect(items.count == 2, "projections: \(items)")
        #expect(Set(items.map(\.name)) == ["Composed", "Decomposed"])
    }

    @Test("Entity ids that differ only in Unicode normalization fold alike with or without a reopen")
    func entityIdentityDoesNotDependOnTheSession() throws {
        let first = Fixtures.itemEvent("r1", seq: 1, time: 1_000, item: Self.composed, .created(name: "A", quantity: 1))
        let second = Fixtures.itemEvent("r2", seq: 1, time: 2_000, item: Self.decomposed, .renamed(name: "B"))
        let together = try makeLog("together")
        try together.ingest([first])
        try together.ingest([second])
        let path = directory.path("reopened.db")
        do {
            let log = try EventLog.create(at: path, replicaID: "reopened", options: .testing(clock: clock))
            try log.ingest([first])
        }
        let reopened = try EventLog.open(at: path, options: .testing(clock: clock))
        try reopened.ingest([second])

        #expect(try together.stateHash() == (try reopened.stateHash()))
    }

    @Test("Replica ids that differ only in Unicode normalization are distinct feeds, not a fork")
    func replicaIDsAreComparedByBytes() throws {
        let log = try makeLog()
        let one = Fixtures.itemEvent(Self.composed, seq: 1, time: 1_000, item: "i1", .created(name: "One", quantity: 1))
        let other = Fixtures.itemEvent(
            Self.decomposed, seq: 1, time: 1_001, item: "i2", .created(name: "Two", quantity: 2))

        let report = try log.ingest([one, other])

        #expect(report.forks.isEmpty, "forks: \(report.forks)")
        #expect(report.stored.count == 2)
        #expect(try log.eventCount() == 2)
    }
}
