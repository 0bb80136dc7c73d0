import Foundation
import TestSupport
import Testing

@testable import Replica

/// `EventLog.checkIntegrity(refold:)` on clean logs and on files damaged
/// by hand while closed, as a disk, a crash or a person with `sqlite3` would.
@Suite("Integrity check")
struct IntegrityCheckTests {
    let directory: TemporaryDirectory
    let clock = ManualClock(1_000)

    init() throws {
        directory = try TemporaryDirectory()
    }

    private var path: String { directory.path("replica.db") }

    /// A log with its own feed, two remote feeds of 20 events, an entity
    /// no domain folds and (with `pending`) projection rows left pending.
    @discardableResult
    private func makeLog(pending: Bool = false) throws -> EventLog {
        let log = try EventLog.create(at: path, replicaID: "a", options: .testing(clock: clock))
        for index in 0..<5 {
            try log.append(NewEvent(item: "own\(index)", .created(name: "Own \(index)", quantity: 1)))
        }
        try log.append(NewEvent(entityType: "pallet", entityID: "p1", payload: #"{"type":"Moved"}"#))
        for origin in ["b", "c"] {
            try log.ingest(
                (1...20).map { seq in
                    Fixtures.itemEvent(
                        origin, seq: UInt64(seq), time: Int64(100 + seq), item: "\(origin)\(seq % 4)",
                        seq <= 4 ? .created(name: "Item \(seq)", quantity: 1) : .quantityChanged(quantity: Int64(seq)))
                })
        }
        if pending {
            try log.ingest(
                (1...300).map { seq in
                    Fixtures.itemEvent(
                        "d", seq: UInt64(seq), time: Int64(200 + seq), item: "d\(seq % 7)", .renamed(name: "D\(seq)"))
                })
        }
        return log
    }

    /// The file opened read-only, as `peerd check` opens it.
    private func readOnly() throws -> EventLog {
        var options = EventLog.Options.testing(clock: clock)
        options.readOnly = true
        return try EventLog.open(at: path, options: options)
    }

    @Test("A clean log passes, pending projection rows and an unfolded type included, and says what it counted")
    func cleanLogPasses() throws {
        let log = try makeLog(pending: true)
        #expect(log.hasPendingProjections)
        let report = try log.checkIntegrity(refold: true)
        #expect(report.findings == [])
        #expect(report.integrityCheck == ["ok"])
        #expect(report.eventCount == 346)
        #expect(report.feedCount == 4)
        // Five own items, four per remote feed of 20, seven of feed d: the pallet is not folded.
        #expect(report.refolded == 5 + 8 + 7)
        #expect(report.summary == "ok: 346 events in 4 feeds, integrity_check ok, 20 projections refolded")
        #expect(try readOnly().checkIntegrity().summary == "ok: 346 events in 4 feeds, integrity_check ok")
    }

    @Test("An event deleted from the middle of a feed is a gap that names the feed and the seq")
    func deletedEventIsAGap() throws {
        do { try makeLog() }
        try RawSQL.execute(
            path, "DELETE FROM events WHERE seq = 7 AND feed = (SELECT id FROM feeds WHERE replica_id = 'b')")

        let report = try readOnly().checkIntegrity()
        #expect(report.findings.map(\.kind) == [.gap])
        let gap = try #require(report.findings.first)
        #expect(gap.feed == FeedID(replicaID: "b"))
        #expect(gap.seq == 7)
        #expect(gap.detail == "feed b/default: seq 7 is missing (it holds seq 6, then 8)")
        #expect(report.eventCount == 45)
    }

    @Test("With refold, the same deletion also shows as a broken chain for its entity")
    func deletedEventBreaksTheChain() throws {
        do { try makeLog() }
        try RawSQL.execute(
            path, "DELETE FROM events WHERE seq = 7 AND feed = (SELECT id FROM feeds WHERE replica_id = 'b')")
        let report = try readOnly().checkIntegrity(refold: true)
        #expect(report.findings.contains { $0.kind == .chain && $0.entityID == "b3" })
    }

    @Test("With refold, an entity whose only event was deleted has a chain head that points nowhere")
    func chainHeadPointsNowhere() throws {
        do { try makeLog() }
        try RawSQL.execute(path, "DELETE FROM events WHERE entity = (SELECT id FROM entities WHERE entity_id = 'own2')")
        let report = try readOnly().checkIntegrity(refold: true)
        #expect(report.findings.map(\.kind) == [.gap, .chain, .projection])
        #expect(report.findings[1].entityID == "own2")
        #expect(report.findings[1].detail.hasSuffix("is not one of its stored events"))
    }

    @Test("A head_seq that disagrees with the stored events is reported for its feed")
    func headMismatch() throws {
        do { try makeLog() }
        try RawSQL.execute(path, "UPDATE feeds SET head_seq = 25 WHERE replica_id = 'c'")
        let report = try readOnly().checkIntegrity()
        #expect(report.findings.map(\.kind) == [.head])
        #expect(
            report.findings.first?.detail == "feed c/default: head_seq is 25, but the newest stored event is seq 20")
    }

    @Test("A projected_offset past the newest event is reported")
    func projectedOffsetPastTheEnd() throws {
        do { try makeLog() }
        try RawSQL.execute(path, "UPDATE meta SET value = '999' WHERE key = 'projected_offset'")
        let report = try readOnly().checkIntegrity()
        #expect(report.findings.map(\.kind) == [.meta])
        #expect(report.findings.first?.detail.contains("projected_offset is 999") == true)
    }

    @Test("One event id stored at two feed slots is reported with both places")
    func repeatedEventID() throws {
        let log = try makeLog()
        let id = UUID()
        try log.ingest([Fixtures.itemEvent("e", seq: 1, time: 500, item: "e1", .deleted, eventID: id)])
        try log.ingest([Fixtures.itemEvent("f", seq: 1, time: 501, item: "e1", .deleted, eventID: id)])
        let report = try log.checkIntegrity()
        #expect(report.findings.map(\.kind) == [.duplicateEventID])
        let detail = try #require(report.findings.first?.detail)
        #expect(detail.hasPrefix("event \(id.lowercased) is stored 2 times: "))
        #expect(detail.contains("feed e/default seq 1") && detail.contains("feed f/default seq 1"))
    }

    @Test("A projection row edited by hand is found by a refold, and only then")
    func editedProjection() throws {
        do { try makeLog() }
        try RawSQL.execute(
            path, #"UPDATE entities SET state = '{"name":"forged"}' WHERE entity_type = 'item' AND entity_id = 'c2'"#)
        #expect(try readOnly().checkIntegrity().isOK)
        let report = try readOnly().checkIntegrity(refold: true)
        #expect(report.findings.map(\.kind) == [.projection])
        #expect(report.findings.first?.entityID == "c2")
        #expect(report.findings.first?.detail.hasPrefix(#"item/c2: the projection is {"name":"forged"}"#) == true)
    }

    @Test(
        "4 KiB of random bytes in a closed replica.db is reported as damaged",
        arguments: [UInt64(8192), nil])
    func damagedPage(offset: UInt64?) throws {
        do {
            let log = try makeLog()
            let note = String(repeating: "n", count: 300)
            for batch in 0..<6 {
                try log.append((0..<500).map { NewEvent(item: "big\(batch * 500 + $0)", .noteChanged(note: note)) })
            }
        }
        var random = SplitMix64(seed: 11)
        try FileDamage.overwritePage(of: path, at: try offset ?? FileDamage.middlePage(of: path), using: &random)

        let report: IntegrityReport
        do {
            report = try readOnly().checkIntegrity()
        } catch let error as EventLogError {
            // Damage to a page that opening reads (the meta table) stops the open itself.
            #expect(error.storageFault?.kind == .damaged, "\(error)")
            return
        }
        #expect(!report.isOK)
        #expect(report.findings.contains { $0.kind == .damaged })
        #expect(report.integrityCheck != ["ok"])
        // SQLite's own words name the damaged page.
        #expect(report.findings.contains { $0.detail.hasPrefix("integrity_check: ") && $0.detail.contains("Page ") })
    }

    @Test("A read-only check beside a writer sees its commits and does not stop it writing")
    func besideAWriter() throws {
        let writer = try makeLog()
        let checker = try readOnly()
        #expect(try checker.checkIntegrity().eventCount == 46)
        try writer.append(NewEvent(item: "own0", .quantityChanged(quantity: 9)))
        #expect(try checker.checkIntegrity().eventCount == 47)
        #expect(try writer.eventCount() == 47)
    }
}
