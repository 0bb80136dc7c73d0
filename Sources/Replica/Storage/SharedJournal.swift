import Foundation

/// A store several nodes share as one log (a site's relays on one
/// PostgreSQL database, docs/relay.md "Relays on a shared PostgreSQL"):
/// it gives every event its one server offset, and a log that writes
/// through it stores each event at that offset.
///
/// A log with a journal (`EventLog.Options.sharedJournal`) runs each of its
/// write transactions as: `beginWrite` (outside the transaction: take the
/// journal's write lock and bring the log up to the journal's newest
/// offset with `EventLog.mirror`), the body, `publish` of what the body
/// stored (still inside the transaction: the journal commits first), the
/// log's commit, and `endWrite`. So nothing is committed locally that the
/// journal does not hold, and the log's offsets are the journal's.
public protocol SharedJournal: AnyObject, Sendable {
    /// Before a write transaction of `log`, outside it: takes the journal's
    /// write lock and mirrors what the log lacks; returns the journal's
    /// newest offset, which the transaction's events follow.
    func beginWrite(_ log: EventLog) throws -> Int64
    /// Inside the transaction, after its body: stores `events` (offsets
    /// after the one `beginWrite` returned) and the heads the transaction
    /// signed or stored signed, and commits. Throws when it could not, and
    /// the transaction then rolls back.
    func publish(_ events: [StoredEvent], signed: [SignedHead], by log: EventLog) throws
    /// After the transaction, committed or not: releases the lock.
    func endWrite()
    /// Outside a write: mirrors into `log` what the journal committed past
    /// the log's shared offset (other nodes' writes); returns the events stored.
    func catchUp(_ log: EventLog) throws -> [StoredEvent]
}

/// One event of a shared journal with the offset and the arrival time the
/// journal gave it.
public struct JournalEntry: Sendable, Equatable {
    public var offset: Int64
    public var arrivalTimeMs: Int64
    public var event: Event

    public init(offset: Int64, arrivalTimeMs: Int64, event: Event) {
        self.offset = offset
        self.arrivalTimeMs = arrivalTimeMs
        self.event = event
    }
}

/// Where a mirrored event is stored: its journal offset and arrival time.
struct PinnedSlot {
    var offset: Int64
    var arrivalMs: Int64
}

/// One event position of a feed: the key a mirrored event is pinned by,
/// a fork is counted once by, and a signed head finds its event by.
public struct FeedSlot: Hashable, Sendable {
    public var feed: FeedID
    public var seq: UInt64

    public init(feed: FeedID, seq: UInt64) {
        self.feed = feed
        self.seq = seq
    }
}

extension EventLog {
    /// The journal offset this log holds everything up to
    /// (`meta.shared_offset`); 0 for a log that never mirrored one.
    public func sharedOffset() throws -> Int64 {
        try read { Int64(try EventLog.readMeta(db, "shared_offset") ?? "0") ?? 0 }
    }

    /// The id of the shared store this log mirrors (`meta.shared_store`), if any.
    public func sharedStoreID() throws -> String? {
        try read { try EventLog.readMeta(db, "shared_store") }
    }

    /// Records that this log mirrors the shared store `id`, holding its
    /// events up to `offset`. A log that mirrors one is written only
    /// through it: a write without the journal is refused.
    public func attachSharedStore(_ id: String, offset: Int64) throws {
        try withoutJournal {
            try write {
                try db.cached("INSERT OR REPLACE INTO meta (key, value) VALUES ('shared_store', ?)").run([.text(id)])
                try setSharedOffset(offset)
            }
        }
    }

    /// Stores events of the shared journal, each at the offset and arrival
    /// time the journal gave it, in one transaction, unverified (a node of
    /// the site verified them before the journal took them), keeping each of
    /// `heads` where a stored chain reaches it (as an import of a signed
    /// export does), and records `through` as the journal offset held.
    /// Events already held are skipped. Returns the events stored.
    @discardableResult
    public func mirror(_ entries: [JournalEntry], heads: [SignedHead], through: Int64) throws -> [StoredEvent] {
        var pins: [FeedSlot: PinnedSlot] = [:]
        for entry in entries {
            pins[FeedSlot(feed: entry.event.feed, seq: entry.event.seq)] = PinnedSlot(
                offset: entry.offset, arrivalMs: entry.arrivalTimeMs)
        }
        pinnedSlots = pins
        defer { pinnedSlots = nil }
        return try withoutJournal {
            try write {
                var points: [FeedID: [UInt64: SignedHead]] = [:]
                for head in heads where head.signature != nil { points[head.feed, default: [:]][head.seq] = head }
                let stored =
                    try entries.isEmpty
                    ? []
                    : ingestInTransaction(
                        entries.map(\.event), proofs: nil, keys: FeedKeys(), vouched: [], points: &points
                    ).stored
                try adoptInTransaction(points.values.flatMap(\.values))
                try setSharedOffset(through)
                return stored
            }
        }
    }

    /// The certificates the log keeps, each with the replica it certifies.
    public func certificateRows() throws -> [(replicaID: String, bytes: [UInt8])] {
        try read {
            let statement = try db.statement("SELECT replica_id, bytes FROM certificates ORDER BY replica_id, bytes")
            var rows: [(replicaID: String, bytes: [UInt8])] = []
            while try statement.step() { rows.append((statement.text(0), statement.blob(1))) }
            return rows
        }
    }

    /// Keeps certificates other nodes of the shared journal stored.
    public func mirrorCertificates(_ certificates: [(replicaID: String, bytes: [UInt8])]) throws {
        try withoutJournal { try storeCertificates(certificates) }
    }

    /// Inside a write transaction: records the journal offset held.
    func setSharedOffset(_ offset: Int64) throws {
        try db.cached("INSERT OR REPLACE INTO meta (key, value) VALUES ('shared_offset', ?)").run([.text("\(offset)")])
    }

    /// Runs `body` with the journal out of the way: the writes in it are
    /// the journal's own (a mirror, an attach).
    func withoutJournal<T>(_ body: () throws -> T) rethrows -> T {
        let outer = journalBypassed
        journalBypassed = true
        defer { journalBypassed = outer }
        return try body()
    }

    /// A write transaction through `journal`: see `SharedJournal`.
    func journaledWrite<T>(_ journal: any SharedJournal, _ body: () throws -> T) throws -> T {
        let head = try journal.beginWrite(self)
        defer { journal.endWrite() }
        journalHead = head
        defer { journalHead = nil }
        return try plainWrite {
            let result = try body()
            // A few events are in memory already; a large transaction's are read back.
            let stored = try storedByLastWrite ?? storedEvents(after: head, limit: Int.max).map(\.stored)
            if !stored.isEmpty {
                try setSharedOffset(stored.last!.offset)
                try journal.publish(stored, signed: signedByLastWrite, by: self)
            }
            return result
        }
    }
}
