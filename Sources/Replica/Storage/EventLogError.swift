/// Why the event log refused or failed an operation. Every case says what
/// happened and what to do; nothing was changed when one is thrown.
///
/// Two families: refusals of what was asked (an invalid event, nothing to
/// undo, a foreign file), which retrying unchanged will not fix, and
/// *storage faults* (``storageFault``), where the file or the disk under it
/// needs a person.
public enum EventLogError: Error, CustomStringConvertible, Sendable {
    /// The file exists but is not a PeerSync database.
    case notAPeerSyncDatabase(path: String, reason: String)
    /// The file is damaged (or not an SQLite file at all).
    case corrupt(path: String, reason: String)
    /// The database was written by a newer PeerSync.
    case newerSchema(path: String, found: Int, supported: Int)
    /// A read-only open found a schema older than this build's, which
    /// only a read-write open migrates.
    case needsMigration(path: String, found: Int, current: Int)
    /// `create` found a database already there.
    case alreadyExists(path: String)
    /// `open` found no database.
    case notFound(path: String)
    /// An event or request that breaks the event model.
    case invalidEvent(String)
    /// An event of a declared type in another scope than its declaration
    /// names (docs/domains.md "Scopes per type").
    case wrongScope(entityType: String, declared: String, given: String)
    /// The entity has no event that an undo could cancel.
    case nothingToUndo(entityType: String, entityID: String)
    /// The entity's latest events are already `limit` undos in a row.
    case undoLimitReached(entityType: String, entityID: String, limit: Int)
    /// Another writer holds the entity (docs/sessions.md): a write, or a
    /// claim without takeover, is refused.
    case entityHeld(entityType: String, entityID: String, holder: String)
    /// This replica held the entity and `holder` took it over; `droppedOwn`
    /// of this replica's events were not applied.
    case takenOver(entityType: String, entityID: String, holder: String, droppedOwn: Int)
    /// A relay granted the entity to `holder`: only a relay's grant takes it over.
    case claimNeedsGrant(entityType: String, entityID: String, holder: String)
    /// A release of an entity this replica does not hold (`holder` does, or nobody).
    case notHeld(entityType: String, entityID: String, holder: String?)
    /// This replica's feed is quarantined: a fork proof shows two histories
    /// of it (a copy restored from an old backup that wrote again), so its
    /// peers take no more of it.
    case feedForked(feed: FeedID)
    /// The log mirrors a shared store (docs/relay.md "Relays on a shared
    /// PostgreSQL") and is written only by the relay that holds it.
    case mirrorsSharedStore(path: String, store: String)
    /// The disk is full; the transaction was rolled back.
    case diskFull(path: String)
    /// The storage failed otherwise: an I/O error, or a file that cannot
    /// be written (read-only, moved or deleted). See ``StorageFault``.
    case storageFailed(StorageFault)
    /// Any other SQLite failure (never a storage fault: those are the
    /// three cases above).
    case storage(SQLiteError)

    /// The storage fault behind this error, or nil when it is a refusal.
    ///
    /// ```swift
    /// if let fault = (error as? EventLogError)?.storageFault, fault.kind == .damaged { print(fault) }
    /// ```
    public var storageFault: StorageFault? {
        switch self {
        case .corrupt(let path, let reason): return StorageFault(kind: .damaged, path: path, detail: reason)
        case .diskFull(let path):
            return StorageFault(kind: .diskFull, path: path, detail: "database or disk is full")
        case .storageFailed(let fault): return fault
        default: return nil
        }
    }

    public var description: String {
        switch self {
        case .notAPeerSyncDatabase(let path, let reason):
            return "\(path) is not a PeerSync database (\(reason)); refusing to touch it"
        case .corrupt, .diskFull, .storageFailed:
            return storageFault!.description
        case .newerSchema(let path, let found, let supported):
            return
                "\(path) has schema version \(found), newer than this peerd supports (\(supported)); upgrade peerd"
        case .needsMigration(let path, let found, let current):
            return
                "\(path) has schema version \(found), older than this peerd's (\(current)); it is migrated when "
                + "opened for writing (`peerd status` does), not when opened read-only"
        case .alreadyExists(let path):
            return "a PeerSync database already exists at \(path); refusing to overwrite it"
        case .notFound(let path):
            return "no PeerSync database at \(path); run `peerd init` first"
        case .invalidEvent(let reason):
            return "invalid event: \(reason)"
        case .wrongScope(let type, let declared, let given):
            return "\(type) events are written in scope \(declared), as its declaration says, not \(given)"
        case .nothingToUndo(let type, let id):
            return "\(type) \(id) has no event to undo"
        case .undoLimitReached(let type, let id, let limit):
            return "\(type) \(id) already has \(limit) consecutive undos, the limit"
        case .entityHeld(let type, let id, let holder):
            return "\(type) \(id) is held by \(holder); claim it with takeover to write to it"
        case .takenOver(let type, let id, let holder, let dropped):
            return
                "\(type) \(id) was taken over by \(holder); \(dropped) of this replica's writes to it were not applied"
        case .claimNeedsGrant(let type, let id, let holder):
            return "\(type) \(id) is held by \(holder) by a relay's grant; only a relay grants a takeover"
        case .notHeld(let type, let id, let holder):
            if let holder { return "\(type) \(id) is held by \(holder), not by this replica; release it with force" }
            return "\(type) \(id) is not held by anyone"
        case .feedForked(let feed):
            return
                "feed \(feed) is forked (this replica wrote two histories of it, e.g. after a restore from an old "
                + "copy) and its peers take no more of it; set this replica up anew (`peerd init` in a new directory)"
        case .mirrorsSharedStore(let path, let store):
            return
                "\(path) mirrors the shared store \(store) and is written only through its relay; "
                + "write through the running relay's API instead"
        case .storage(let error):
            return error.description
        }
    }
}

extension EventLogError {
    /// Maps a low-level failure to the error a user should see: every
    /// SQLite storage fault becomes one that names the file.
    static func wrapping(_ error: Error, path: String) -> Error {
        guard let sqlite = error as? SQLiteError else { return error }
        switch sqlite.faultKind {
        case .diskFull: return EventLogError.diskFull(path: path)
        case .damaged: return EventLogError.corrupt(path: path, reason: sqlite.messageWithSystemReason)
        case .some(let kind):
            return EventLogError.storageFailed(
                StorageFault(kind: kind, path: path, detail: sqlite.messageWithSystemReason))
        case nil: return EventLogError.storage(sqlite)
        }
    }
}
