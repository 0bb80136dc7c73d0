/// A failure of the storage under the event log, not a refusal of what
/// was asked: the file is damaged, the disk is full, the system failed a
/// read or write, or the file cannot be written. Retrying at once does not
/// help; a person has to act, so a daemon stops writing and says why
/// instead of retrying in a loop.
///
/// ```swift
/// do {
///     try log.ingest(batch)
/// } catch let error as EventLogError {
///     if let fault = error.storageFault { enterDegradedState(fault.kind, fault.description) } else { refuse(error) }
/// }
/// ```
public struct StorageFault: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong with the storage.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        /// The file is damaged or is not a database (`SQLITE_CORRUPT`,
        /// `SQLITE_NOTADB`, or the log's own structures do not hold).
        case damaged
        /// The disk or a quota is full (`SQLITE_FULL`, or a failed write
        /// with `ENOSPC`/`EDQUOT`); the transaction was rolled back.
        case diskFull
        /// The system failed a read or a write (`SQLITE_IOERR_*`): a failing
        /// disk, a file system gone away.
        case io
        /// The database cannot be written, or not reached: a read-only file,
        /// directory or file system, or a file moved or deleted while open
        /// (`SQLITE_READONLY*`, `SQLITE_CANTOPEN`, `SQLITE_PERM`).
        case readOnly
        /// The file open was deleted, or another put in its place, while
        /// open: what is written would go to a file no one can open again.
        case deleted
    }

    public var kind: Kind
    /// The database file.
    public var path: String
    /// What SQLite (and the system, for an I/O failure) said.
    public var detail: String

    public init(kind: Kind, path: String, detail: String) {
        self.kind = kind
        self.path = path
        self.detail = detail
    }

    /// What happened and what to do, in one line.
    public var description: String {
        switch kind {
        case .damaged:
            return
                "\(path) is damaged or not a database (\(detail)): run `peerd check`; restore it from a backup "
                + "or a peer (docs/operations.md)"
        case .diskFull:
            return "the disk holding \(path) is full; nothing was written: free some space and retry"
        case .io:
            return
                "reading or writing \(path) failed (\(detail)): the disk or its file system reported an error; "
                + "check it (dmesg), then run `peerd check`"
        case .readOnly:
            return
                "\(path) cannot be written (\(detail)): it, its directory or its file system is read-only, or it "
                + "was moved or deleted while open; make it writable (or put it back) and start again"
        case .deleted:
            return
                "\(path) was deleted or replaced while open (\(detail)); nothing more is written to it: stop the "
                + "daemon, put the file back or restore it from a backup or a peer (docs/operations.md)"
        }
    }
}
