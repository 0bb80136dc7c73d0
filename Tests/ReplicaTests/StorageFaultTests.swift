import CSQLite
import Foundation
import TestSupport
import Testing

@testable import Replica

/// `EventLogError.storageFault`: a damaged file, a full disk, an I/O error
/// or a file that cannot be written, told apart from refusals, against
/// failures SQLite really reports.
@Suite("Storage faults")
struct StorageFaultTests {
    let directory: TemporaryDirectory
    let clock = ManualClock(1_000)

    init() throws {
        directory = try TemporaryDirectory()
    }

    private var path: String { directory.path("replica.db") }

    /// A log of `count` events with 200-byte notes: hundreds of pages.
    private func filledLog(count: Int = 3_000) throws -> EventLog {
        let log = try EventLog.create(at: path, replicaID: "a", options: .testing(clock: clock))
        let note = String(repeating: "n", count: 200)
        for start in stride(from: 0, to: count, by: 500) {
            try log.append(
                (start..<min(start + 500, count)).map { NewEvent(item: "i\($0 % 300)", .noteChanged(note: note)) })
        }
        try log.writePendingProjections()
        return log
    }

    /// The storage fault of what `body` throws; records an issue when it throws something else or nothing.
    private func fault(
        sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void
    ) -> StorageFault? {
        do {
            try body()
            Issue.record("expected a storage fault, nothing was thrown", sourceLocation: sourceLocation)
        } catch let error as EventLogError {
            if error.storageFault == nil {
                Issue.record("expected a storage fault, got \(error)", sourceLocation: sourceLocation)
            }
            return error.storageFault
        } catch {
            Issue.record("expected an EventLogError, got \(error)", sourceLocation: sourceLocation)
        }
        return nil
    }

    @Test("A page of garbage in the middle of a closed replica.db reads back as a damaged file")
    func damagedPageIsDamaged() throws {
        do { _ = try filledLog() }
        #expect(!FileManager.default.fileExists(atPath: path + "-wal"), "closing folds the WAL into the file")
        var random = SplitMix64(seed: 7)
        try FileDamage.overwritePage(of: path, at: try FileDamage.middlePage(of: path), using: &random)

        let log = try EventLog.open(at: path, options: .testing(clock: clock))
        let found = fault { _ = try log.events(after: 0, limit: Int.max) }
        #expect(found?.kind == .damaged)
        #expect(found?.path == path)
        #expect(found?.description.contains("run `peerd check`") == true)
        #expect(found?.description.contains("restore it from a backup") == true)
    }

    @Test("A write the kernel refuses with ENOSPC is a full disk, and nothing was written")
    func noSpaceIsDiskFull() throws {
        let log = try filledLog(count: 10)
        try FileDamage.whileDescriptor(of: path + "-wal", refersTo: "/dev/full", flags: O_WRONLY) {
            let found = fault { try log.append(NewEvent(item: "i1", .quantityChanged(quantity: 3))) }
            #expect(found?.kind == .diskFull)
            #expect(found?.description.contains("nothing was written") == true)
        }
        #expect(try log.eventCount() == 10)
        // With the disk back, the same write goes through.
        try log.append(NewEvent(item: "i1", .quantityChanged(quantity: 3)))
        #expect(try log.eventCount() == 11)
    }

    @Test("SQLite's own disk-full limit is a full disk too")
    func pageLimitIsDiskFull() throws {
        let log = try filledLog(count: 10)
        let pages = try #require(try log.db.scalarInt("PRAGMA page_count"))
        try log.db.execute("PRAGMA max_page_count = \(pages)")
        let note = String(repeating: "x", count: 4_000)
        let found = fault { try log.append((1...50).map { NewEvent(item: "n\($0)", .noteChanged(note: note)) }) }
        #expect(found?.kind == .diskFull)
    }

    @Test("A write the kernel fails (EBADF) is an I/O error, and nothing was written")
    func failedWriteIsIO() throws {
        let log = try filledLog(count: 10)
        try FileDamage.whileDescriptor(of: path + "-wal", refersTo: "/dev/zero", flags: O_RDONLY) {
            let found = fault { try log.append(NewEvent(item: "i1", .quantityChanged(quantity: 3))) }
            #expect(found?.kind == .io)
            #expect(found?.detail.contains("disk I/O error") == true, "\(String(describing: found))")
            #expect(found?.description.contains("peerd check") == true)
        }
        #expect(try log.eventCount() == 10)
        try log.append(NewEvent(item: "i1", .quantityChanged(quantity: 3)))
        #expect(try log.eventCount() == 11)
    }

    @Test("A write to a database opened read-only is a read-only fault")
    func readOnlyOpenIsReadOnly() throws {
        do { _ = try filledLog(count: 10) }
        var options = EventLog.Options.testing(clock: clock)
        options.readOnly = true
        let log = try EventLog.open(at: path, options: options)
        #expect(try log.eventCount() == 10)
        let found = fault { try log.append(NewEvent(item: "i1", .quantityChanged(quantity: 3))) }
        #expect(found?.kind == .readOnly)
        #expect(found?.description.contains("cannot be written") == true)
    }

    @Test("Refusals of what was asked are not storage faults")
    func refusalsAreNotFaults() throws {
        let log = try filledLog(count: 10)
        let refusals: [() throws -> Void] = [
            { try log.append(NewEvent(entityType: "item", entityID: "i1", payload: "[1]")) },
            { try log.append(NewEvent(entityType: "item", entityID: "i1", payload: #"{"type":"Exploded"}"#)) },
            { try log.append(NewEvent(entityType: "", entityID: "i1", payload: "{}")) },
            { _ = try log.undo(entityType: "item", entityID: "never-seen") },
        ]
        for refusal in refusals {
            #expect {
                try refusal()
            } throws: { error in
                (error as? EventLogError).map { $0.storageFault == nil } ?? false
            }
        }
        // A gap is not even an error: the report names it.
        let report = try log.ingest([Fixtures.itemEvent("b", seq: 5, time: 1, item: "i1", .deleted)])
        #expect(report.gaps.count == 1)
        #expect(EventLogError.newerSchema(path: path, found: 9, supported: 2).storageFault == nil)
        #expect(EventLogError.notAPeerSyncDatabase(path: path, reason: "foreign").storageFault == nil)
    }

    @Test(
        "Result codes and errno map to the fault kinds",
        arguments: [
            (SQLITE_CORRUPT, 0, StorageFault.Kind.damaged), (SQLITE_NOTADB, 0, .damaged),
            (SQLITE_IOERR | (33 << 8), 0, .damaged), (SQLITE_FULL, ENOSPC, .diskFull),
            (SQLITE_IOERR | (4 << 8), ENOSPC, .diskFull), (SQLITE_IOERR | (19 << 8), EDQUOT, .diskFull),
            (SQLITE_IOERR | (3 << 8), EIO, .io), (SQLITE_IOERR, 0, .io), (SQLITE_IOERR | (3 << 8), EROFS, .readOnly),
            (SQLITE_READONLY, 0, .readOnly), (SQLITE_READONLY | (4 << 8), 0, .readOnly),
            (SQLITE_CANTOPEN, ENOENT, .readOnly), (SQLITE_CANTOPEN, ENOSPC, .diskFull), (SQLITE_PERM, 0, .readOnly),
        ] as [(Int32, Int32, StorageFault.Kind)])
    func codesMapToKinds(code: Int32, systemErrno: Int32, kind: StorageFault.Kind) {
        let error = SQLiteError(code: code, message: "m", sql: nil, systemErrno: systemErrno)
        #expect(error.faultKind == kind)
        #expect((EventLogError.wrapping(error, path: path) as? EventLogError)?.storageFault?.kind == kind)
    }

    @Test(
        "Busy, constraint, misuse and out-of-memory codes are not storage faults",
        arguments: [
            SQLITE_BUSY, SQLITE_LOCKED, SQLITE_CONSTRAINT, SQLITE_MISUSE, SQLITE_ERROR, SQLITE_IOERR | (12 << 8),
        ])
    func otherCodesAreNotFaults(code: Int32) {
        let error = SQLiteError(code: code, message: "m", sql: nil, systemErrno: 0)
        #expect(error.faultKind == nil)
        #expect((EventLogError.wrapping(error, path: path) as? EventLogError)?.storageFault == nil)
    }
}
