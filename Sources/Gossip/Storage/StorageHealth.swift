import Replica

/// Whether the replica's database works: `ok`, or `degraded` after a
/// storage fault (a damaged file, an I/O error, a full disk, a file that
/// cannot be written, a file deleted while open). A degraded replica keeps serving what it can still
/// read; sync tries the work that failed again every few seconds instead of
/// in a loop (docs/operations.md, "Storage faults").
public struct StorageHealth: Sendable, Hashable {
    /// The fault that made the replica degraded, `nil` while it is ok.
    public var fault: StorageFault?
    /// When it became degraded, on the wall clock (ms since 1970).
    public var sinceMs: Int64?
    /// Storage faults seen since the daemon started.
    public var faults = 0

    public init() {}

    public var isDegraded: Bool { fault != nil }

    /// `ok` or `degraded`, as `/health` and `/status` say it.
    public var state: String { isDegraded ? "degraded" : "ok" }

    /// The storage fault behind `error`, or `nil` for an ordinary refusal
    /// (an invalid event, a busy database).
    public static func fault(of error: any Error) -> StorageFault? {
        (error as? EventLogError)?.storageFault
    }

    /// True when a later successful write shows the fault is over: a full
    /// disk, an I/O error or a read-only file can heal; a damaged file
    /// stays degraded, since a write that misses the damage proves nothing,
    /// and so does a deleted one, which the daemon still has open.
    static func heals(_ fault: StorageFault) -> Bool { fault.kind != .damaged && fault.kind != .deleted }
}
