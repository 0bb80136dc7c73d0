import Replica
import SyncProtocol

/// Whether the replica's database works: `ok`, or `degraded` after a
/// storage fault (a damaged file, an I/O error, a full disk). A degraded
/// replica keeps serving what it can still read; sync retries the work
/// that failed every few seconds instead of in a loop (docs/operations.md).
public struct StorageHealth: Sendable, Hashable {
    /// What went wrong with the file.
    public enum Fault: String, Sendable, Hashable {
        /// SQLite found the file damaged, or it is no database.
        case damaged
        /// The disk is full; nothing was written.
        case diskFull = "disk_full"
        /// Reading or writing the file failed.
        case io
    }

    /// The fault that made the replica degraded, `nil` while it is ok.
    public var fault: Fault?
    /// The failure's own words.
    public var message: String?
    /// When it became degraded, on the wall clock (ms since 1970).
    public var sinceMs: Int64?
    /// Storage faults seen since the daemon started.
    public var faults = 0

    public init() {}

    public var isDegraded: Bool { fault != nil }

    /// `ok` or `degraded`, as `/health` and `/status` say it.
    public var state: String { isDegraded ? "degraded" : "ok" }

    /// The fault an error of the event log reports, or `nil` for an
    /// ordinary refusal (an invalid event, a busy database).
    public static func fault(of error: any Error) -> Fault? {
        switch error {
        case EventLogError.corrupt, EventLogError.notAPeerSyncDatabase: return .damaged
        case EventLogError.diskFull: return .diskFull
        case EventLogError.storage(let sqlite) where sqlite.isIOError: return .io
        case let sqlite as SQLiteError where sqlite.isDiskFull: return .diskFull
        case let sqlite as SQLiteError where sqlite.isCorruptOrNotADatabase: return .damaged
        case let sqlite as SQLiteError where sqlite.isIOError: return .io
        default: return nil
        }
    }

    /// What a person does about `fault`.
    public static func advice(for fault: Fault) -> String {
        switch fault {
        case .damaged: "the database file is damaged: run `peerd check`, then restore it (docs/operations.md, Backups)"
        case .diskFull: "the disk is full: free some space; writing resumes by itself"
        case .io: "the disk failed a read or write: check the disk and the system log"
        }
    }
}

extension SQLiteError {
    /// True for an I/O error (`SQLITE_IOERR` and its extended codes, `SQLITE_CANTOPEN`, `SQLITE_READONLY`).
    var isIOError: Bool { primaryCode == 10 || primaryCode == 14 || primaryCode == 8 }
}
