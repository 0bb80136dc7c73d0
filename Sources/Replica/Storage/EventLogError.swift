/// Why the event log refused or failed an operation. Every case says what
/// happened and what to do; nothing was changed when one is thrown.
public enum EventLogError: Error, CustomStringConvertible, Sendable {
    /// The file exists but is not a PeerSync database.
    case notAPeerSyncDatabase(path: String, reason: String)
    /// The file is damaged (or not an SQLite file at all).
    case corrupt(path: String, reason: String)
    /// The database was written by a newer PeerSync.
    case newerSchema(path: String, found: Int, supported: Int)
    /// `create` found a database already there.
    case alreadyExists(path: String)
    /// `open` found no database.
    case notFound(path: String)
    /// An event or request that breaks the event model.
    case invalidEvent(String)
    /// The entity has no event that an undo could cancel.
    case nothingToUndo(entityType: String, entityID: String)
    /// The entity's latest events are already `limit` undos in a row.
    case undoLimitReached(entityType: String, entityID: String, limit: Int)
    /// The disk is full; the transaction was rolled back.
    case diskFull(path: String)
    /// Any other storage failure.
    case storage(SQLiteError)

    public var description: String {
        switch self {
        case .notAPeerSyncDatabase(let path, let reason):
            return "\(path) is not a PeerSync database (\(reason)); refusing to touch it"
        case .corrupt(let path, let reason):
            return "\(path) is damaged or not a database (\(reason)); restore it from a backup or a peer"
        case .newerSchema(let path, let found, let supported):
            return
                "\(path) has schema version \(found), newer than this peerd supports (\(supported)); upgrade peerd"
        case .alreadyExists(let path):
            return "a PeerSync database already exists at \(path); refusing to overwrite it"
        case .notFound(let path):
            return "no PeerSync database at \(path); run `peerd init` first"
        case .invalidEvent(let reason):
            return "invalid event: \(reason)"
        case .nothingToUndo(let type, let id):
            return "\(type) \(id) has no event to undo"
        case .undoLimitReached(let type, let id, let limit):
            return "\(type) \(id) already has \(limit) consecutive undos, the limit"
        case .diskFull(let path):
            return "the disk holding \(path) is full; nothing was written; free space and retry"
        case .storage(let error):
            return error.description
        }
    }
}

extension EventLogError {
    /// Maps a low-level failure to the error a user should see.
    static func wrapping(_ error: Error, path: String) -> Error {
        guard let sqlite = error as? SQLiteError else { return error }
        if sqlite.isDiskFull { return EventLogError.diskFull(path: path) }
        if sqlite.isCorruptOrNotADatabase { return EventLogError.corrupt(path: path, reason: sqlite.message) }
        return EventLogError.storage(sqlite)
    }
}
