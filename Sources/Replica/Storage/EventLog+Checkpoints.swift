import Foundation

/// A checkpoint a log took: what it states, the statement it came in, and
/// whether the log still holds the events it covers.
public struct HeldCheckpoint: Hashable, Sendable {
    public var content: CheckpointContent
    /// The statement as received or made (a signed one, as SyncProtocol
    /// writes it); what this log serves to a peer that starts from it.
    public var statement: [UInt8]
    /// When this log took it (Unix ms).
    public var takenMs: Int64
    /// The checkpoint at or below whose cursor this log holds no event:
    /// the one it started from, or the newest whose history it dropped;
    /// nil while it holds every event. A peer behind it is not served
    /// those feeds from here.
    public var floor: CheckpointContent?

    /// Whether this log holds every event the checkpoint covers (it
    /// neither started from a checkpoint nor dropped any history).
    public var historyHeld: Bool { floor == nil }
    /// Whether the events this checkpoint covers are all gone from this log.
    public var historyDropped: Bool { floor?.id == content.id }
    /// The cursor below which this log holds no event (empty: none).
    public var floorCursor: VectorCursor { floor?.cursor ?? VectorCursor() }
}

/// The checkpoint a log folds from, as its transactions read it.
struct CoveredEvents {
    /// The hex id in `meta.checkpoint`, empty for none.
    var id: String
    /// Its content; nil for none.
    var content: CheckpointContent?
    /// The checkpoint `meta.history_floor` names (hex id, empty for none):
    /// the log holds no event at or below its cursor.
    var floorID = ""
    var floor: CheckpointContent?

    static let none = CoveredEvents(id: "", content: nil)

    /// The cursor it covers (empty for none).
    var cursor: VectorCursor { content?.cursor ?? VectorCursor() }

    func covers(_ event: Event) -> Bool { content?.covers(event) ?? false }
}

extension EventLog {
    /// The checkpoint this log folds from; nil when it took none.
    public func checkpoint() throws -> HeldCheckpoint? {
        try read {
            guard let id = try EventLog.readMeta(db, "checkpoint"), !id.isEmpty else { return nil }
            let statement = try db.cached("SELECT content, statement, taken_ms FROM checkpoints WHERE id = ?")
            try statement.bind([.blob(Hex.bytes(id) ?? [])])
            defer { statement.reset() }
            guard try statement.step() else {
                throw EventLogError.corrupt(path: path, reason: "meta names checkpoint \(id), which is not stored")
            }
            let content = try CheckpointContent(encoded: statement.blob(0))
            let held = HeldCheckpoint(
                content: content, statement: statement.blob(1), takenMs: statement.int64(2), floor: nil)
            statement.reset()
            guard let floorID = try EventLog.readMeta(db, "history_floor"), !floorID.isEmpty else { return held }
            return HeldCheckpoint(
                content: content, statement: held.statement, takenMs: held.takenMs,
                floor: floorID == id ? content : try storedCheckpoint(id: floorID))
        }
    }

    /// A checkpoint of everything this log holds now, extending the one it
    /// folds from (docs/storage.md "Checkpoints"). It is computed, not
    /// taken: `take(_:statement:)` takes it once it is signed. Feeds of
    /// domain declarations are never covered (they stay in every log).
    public func makeCheckpoint() throws -> CheckpointContent {
        try write {
            // The bases are read from the rows: every pending one is written first.
            let tail = try syncPending()
            try writePending(in: tail)
            var cursor = VectorCursor()
            for (feed, seq) in try self.cursor().heads where feed.scope != DeclarationEvent.scope {
                cursor[feed] = seq
            }
            let held = try checkpoint()
            if let held, !held.content.cursor.heads.allSatisfy({ cursor[$0.key] >= $0.value }) {
                throw CheckpointError.notApplicable("this log's cursor is behind its own checkpoint")
            }
            var digests = BaseDigests()
            try forEachBase(at: cursor, past: try entitiesWithEventsPast(cursor), in: tail) { _, base in
                _ = digests.add(base)
            }
            return CheckpointContent(
                previous: held?.content.id, madeMs: options.wallClock(), madeBy: replicaID, cursor: cursor,
                links: try links(at: cursor), entityCount: digests.count, stateHash: digests.stateHash(),
                baseDigest: digests.baseDigest())
        }
    }

    /// What taking a checkpoint did.
    public enum Taking: Equatable, Sendable {
        /// It is this log's checkpoint now; `refolded` entities had events
        /// after it and were folded again on top of it.
        case taken(refolded: Int)
        /// This log holds it already, or a later one of its chain.
        case alreadyHeld
    }

    /// Recomputes `content` from the events this log holds and, when it
    /// matches, folds from it from now on (docs/storage.md "Checkpoints").
    ///
    /// - Throws: `CheckpointError.mismatch` when a link, the state hash,
    ///   the base digest or the entity count differ; `.notApplicable` when
    ///   this log lacks covered events or holds another chain.
    public func take(_ content: CheckpointContent, statement: [UInt8]) throws -> Taking {
        try write {
            let tail = try syncPending()
            try writePending(in: tail)
            // The one it folds from, or an earlier one of its chain.
            if try isStored(content) { return .alreadyHeld }
            let held = try checkpoint()
            guard content.previous == held?.content.id else {
                throw CheckpointError.notApplicable(
                    "it extends checkpoint \(content.previous.map(Hex.string) ?? "none"), this log folds from "
                        + "\(held.map { Hex.string($0.content.id) } ?? "none")")
            }
            let mine = try cursor()
            let lacking = mine.missingCount(from: content.cursor)
            guard lacking == 0 else {
                throw CheckpointError.notApplicable("this log lacks \(lacking) events it covers")
            }
            func mismatch(_ detail: String) -> CheckpointError {
                .mismatch(checkpoint: Hex.string(content.id), madeBy: content.madeBy, detail: detail)
            }
            for (feed, link) in try links(at: content.cursor).sorted(by: { $0.key < $1.key })
            where content.links[feed] != link {
                throw mismatch("feed \(feed)'s chain link at seq \(content.cursor[feed]) differs")
            }
            let past = try entitiesWithEventsPast(content.cursor)
            var digests = BaseDigests()
            var bases: [(row: Int64, base: EntityBase)] = []
            try forEachBase(at: content.cursor, past: past, in: tail) { row, base in
                _ = digests.add(base)
                bases.append((row, base))
            }
            guard digests.count == content.entityCount else {
                throw mismatch("it has \(content.entityCount) entities, the events fold to \(digests.count)")
            }
            guard digests.stateHash() == content.stateHash else {
                throw mismatch("its state hash differs from the fold of the events it covers")
            }
            guard digests.baseDigest() == content.baseDigest else {
                throw mismatch("its base digest differs from the fold of the events it covers (sessions or keys)")
            }
            try store(content, statement: statement, historyHeld: true)
            try db.execute("DELETE FROM entity_bases")
            for (row, base) in bases { try insertBase(base, row: row) }
            try refold(past, in: try syncPending())
            return .taken(refolded: past.count)
        }
    }

    /// Starts an empty log from a checkpoint: its bases become the
    /// entities' state, each feed's head its cursor, and events after it
    /// fold on top. The bases come in pages, in `(type, id)` order, and are
    /// checked against the content's digests before anything is committed.
    ///
    /// - Throws: `CheckpointError.notApplicable` for a log that holds
    ///   events; `.mismatch` when the bases do not match the content.
    public func start(
        from content: CheckpointContent, statement: [UInt8], bases nextPage: () throws -> [EntityBase]?
    ) throws {
        try write {
            guard try storedEventCount() == 0, try checkpoint() == nil else {
                throw CheckpointError.notApplicable("this log already holds events")
            }
            func mismatch(_ detail: String) -> CheckpointError {
                .mismatch(checkpoint: Hex.string(content.id), madeBy: content.madeBy, detail: detail)
            }
            var digests = BaseDigests()
            while let received = try nextPage() {
                for base in received {
                    guard digests.add(base) else { throw mismatch("its bases are not in (type, id) order") }
                    try writeBase(base)
                }
            }
            guard digests.count == content.entityCount, digests.stateHash() == content.stateHash,
                digests.baseDigest() == content.baseDigest
            else { throw mismatch("the bases received do not fold to its state hash and digest") }
            for feed in content.cursor.feeds {
                let row = try feedRowID(feed, create: true)!
                try setHead(content.cursor[feed], link: content.links[feed] ?? FeedChain.genesis, feedRow: row)
            }
            try store(content, statement: statement, historyHeld: false)
            try raiseHistoryOffset(to: 1)  // where a thin client is served the state
            // The rows were written here, past the caches.
            writtenRows = WrittenRows()
            pending = nil
        }
    }

    /// The bases of the checkpoint this log folds from, in `(type, id)`
    /// order, those after `after` (all with nil), at most `limit`: what a
    /// peer that starts from it is sent.
    public func checkpointBases(after: (type: String, id: String)?, limit: Int) throws -> [EntityBase] {
        try read {
            let statement = try db.cached(
                Self.baseSelect + """
                     WHERE ?1 IS NULL OR n.entity_type > ?1 OR (n.entity_type = ?1 AND n.entity_id > ?2)
                    ORDER BY n.entity_type, n.entity_id LIMIT ?3
                    """)
            try statement.bind([
                after.map { .text($0.type) } ?? .null, .text(after?.id ?? ""), .int(Int64(limit)),
            ])
            var result: [EntityBase] = []
            while try statement.step() { result.append(try base(from: statement)) }
            return result
        }
    }

    /// `start(from:statement:bases:)` with every base at hand (a checkpoint file's).
    public func start(from content: CheckpointContent, statement: [UInt8], bases: [EntityBase]) throws {
        var given: [EntityBase]? = bases
        try start(from: content, statement: statement) {
            defer { given = nil }
            return given
        }
    }

    /// The bases of the checkpoint this log folds from, `pageSize` at a time
    /// in `(type, id)` order: what `start(from:statement:bases:)` on another
    /// log takes (`pages.next`) and a checkpoint file holds.
    public func checkpointBasePages(pageSize: Int = 2_000) -> CheckpointBasePages {
        CheckpointBasePages(log: self, pageSize: pageSize)
    }

    // MARK: - Inside a transaction

    /// Inside a transaction: the checkpoint the fold starts from, as
    /// `meta.checkpoint` names it; read again when another connection took one.
    func refreshCoveredEvents() throws {
        let id = try EventLog.readMeta(db, "checkpoint") ?? ""
        let floorID = try EventLog.readMeta(db, "history_floor") ?? ""
        if floorID != covered.floorID {
            covered.floorID = floorID
            covered.floor = floorID.isEmpty ? nil : try storedCheckpoint(id: floorID)
        }
        guard id != covered.id else { return }
        if id.isEmpty {
            covered = .none
        } else {
            guard let held = try checkpoint() else { return }
            covered = CoveredEvents(id: id, content: held.content, floorID: floorID, floor: held.floor)
        }
        pending = nil
        writtenRows = WrittenRows()
    }

    /// Inside a transaction: the base of an entity in the checkpoint this
    /// log folds from; nil when it has none.
    func checkpointBase(entityRow: Int64) throws -> EntityBase? {
        guard !covered.id.isEmpty else { return nil }
        let statement = try db.cached(Self.baseSelect + " WHERE b.entity = ?")
        try statement.bind([.int(entityRow)])
        defer { statement.reset() }
        return try statement.step() ? try base(from: statement) : nil
    }

    /// The columns `base(from:)` reads, for a `WHERE` to follow.
    private static let baseSelect = """
        SELECT n.entity_type, n.entity_id, b.state, b.holder, b.claim, b.granted, b.last_time_ms, b.last_seq,
            b.last_event_id
        FROM entity_bases b JOIN entities n ON n.id = b.entity
        """

    /// The base a row of `baseSelect` holds.
    private func base(from statement: SQLiteStatement) throws -> EntityBase {
        guard let lastEventID = statement.uuid(8) else {
            throw EventLogError.corrupt(path: path, reason: "an entity base has no last event id")
        }
        return EntityBase(
            entityType: statement.text(0), entityID: statement.text(1),
            state: statement.isNull(2) ? nil : statement.text(2),
            session: SessionState(
                holder: statement.isNull(3) ? nil : statement.text(3),
                claim: statement.isNull(4) ? nil : statement.uuid(4), granted: statement.int64(5) != 0),
            lastKey: EventOrderKey(timeMs: statement.int64(6), seq: UInt64(statement.int64(7)), eventID: lastEventID))
    }

    /// Inside a write transaction: `base` is its entity's base and its state.
    func writeBase(_ base: EntityBase) throws {
        let row = try entityRowID(EntityKey(type: base.entityType, id: base.entityID), create: true)!
        try db.cached(
            """
            UPDATE entities SET state = ?, last_time_ms = ?, last_seq = ?, last_event_id = ?, holder = ?,
                claimed = max(claimed, ?) WHERE id = ?
            """
        ).run([
            base.state.map { .text($0) } ?? .null, .int(base.lastKey.timeMs), .int(Int64(base.lastKey.seq)),
            .uuid(base.lastKey.eventID), base.session.holder.map { .text($0) } ?? .null,
            .int(base.session == .free ? 0 : 1), .int(row),
        ])
        try insertBase(base, row: row)
    }

    func insertBase(_ base: EntityBase, row: Int64) throws {
        try db.cached(
            """
            INSERT INTO entity_bases (entity, state, holder, claim, granted, last_time_ms, last_seq, last_event_id)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """
        ).run([
            .int(row), base.state.map { .text($0) } ?? .null, base.session.holder.map { .text($0) } ?? .null,
            base.session.claim.map { .uuid($0) } ?? .null, .int(base.session.granted ? 1 : 0),
            .int(base.lastKey.timeMs), .int(Int64(base.lastKey.seq)), .uuid(base.lastKey.eventID),
        ])
    }

    /// Inside a transaction: a checkpoint this log took, by hex id.
    func storedCheckpoint(id: String) throws -> CheckpointContent {
        let statement = try db.cached("SELECT content FROM checkpoints WHERE id = ?")
        try statement.bind([.blob(Hex.bytes(id) ?? [])])
        defer { statement.reset() }
        guard try statement.step() else {
            throw EventLogError.corrupt(path: path, reason: "meta names checkpoint \(id), which is not stored")
        }
        return try CheckpointContent(encoded: statement.blob(0))
    }

    /// Inside a write transaction: this log holds no event at or below `content`'s cursor from now on.
    func setHistoryFloor(_ content: CheckpointContent) throws {
        let id = Hex.string(content.id)
        try db.cached("UPDATE meta SET value = ? WHERE key = 'history_floor'").run([.text(id)])
        covered.floorID = id
        covered.floor = content
    }

    func store(_ content: CheckpointContent, statement: [UInt8], historyHeld: Bool) throws {
        let id = content.id
        try db.cached(
            "INSERT OR REPLACE INTO checkpoints (id, content, statement, made_ms, taken_ms) VALUES (?, ?, ?, ?, ?)"
        ).run([.blob(id), .blob(content.encoded), .blob(statement), .int(content.madeMs), .int(options.wallClock())])
        try db.cached("UPDATE meta SET value = ? WHERE key = 'checkpoint'").run([.text(Hex.string(id))])
        if !historyHeld { try setHistoryFloor(content) }
        covered.id = Hex.string(id)
        covered.content = content
    }

    /// Whether the checkpoint is one this log took (an earlier one of its chain).
    func isStored(_ content: CheckpointContent) throws -> Bool {
        let statement = try db.cached("SELECT 1 FROM checkpoints WHERE id = ?")
        try statement.bind([.blob(content.id)])
        defer { statement.reset() }
        return try statement.step()
    }

    /// Each feed's chain link at `cursor`.
    private func links(at cursor: VectorCursor) throws -> [FeedID: [UInt8]] {
        var links: [FeedID: [UInt8]] = [:]
        for feed in cursor.feeds {
            guard let row = try feedRowID(feed, create: false) else { continue }
            links[feed] = try link(of: feed, feedRow: row, at: cursor[feed])
        }
        return links
    }

    /// Inside a transaction, after `syncPending()`: every entity's base at
    /// `cursor`, which covers the checkpoint this log folds from, in
    /// `(type, id)` order. An entity none of whose held events lies past
    /// `cursor` (not in `past`) has its state now as its base; the others
    /// are folded from their base over the events `cursor` covers.
    private func forEachBase(
        at cursor: VectorCursor, past: Set<Int64>, in tail: SyncedTail,
        _ body: (_ row: Int64, _ base: EntityBase) throws -> Void
    ) throws {
        let rows = try db.statement(
            """
            SELECT n.id, n.entity_type, n.entity_id, n.claimed FROM entities n
            WHERE n.state IS NOT NULL OR n.claimed != 0 OR n.last_offset IS NOT NULL
                OR n.id IN (SELECT entity FROM entity_bases)
            ORDER BY n.entity_type, n.entity_id
            """)
        while try rows.step() {
            let row = rows.int64(0)
            let type = rows.text(1)
            guard let domain = domains[type] else { continue }
            let id = rows.text(2)
            if !past.contains(row), rows.int64(3) == 0 {
                // Every held event of it is covered: its fold now is its base.
                guard var folded = try latestFold(row, domain: domain, pending: pending) else {
                    if let start = try checkpointBase(entityRow: row) { try body(row, start) }
                    continue
                }
                let state = folded.hasState ? folded.encoded() : nil
                try body(
                    row,
                    EntityBase(entityType: type, entityID: id, state: state, session: .free, lastKey: folded.lastKey))
                continue
            }
            let start = try checkpointBase(entityRow: row)
            var history: [Event] = []
            if let head = try chainHead(entityRow: row, in: tail) {
                history = try entityHistory(head: head).map(\.event)
            }
            if past.contains(row) { history = history.filter { $0.seq <= cursor[$0.feed] } }
            if let base = Self.base(entityType: type, entityID: id, domain: domain, start: start, afterIt: history) {
                try body(row, base)
            }
        }
    }

    /// The fold of `events` (canonical order) on top of `start`, as a base;
    /// nil when there is neither.
    static func base(
        entityType: String, entityID: String, domain: Domain, start: EntityBase?, afterIt events: [Event]
    ) -> EntityBase? {
        guard let last = events.last?.orderKey ?? start?.lastKey else { return nil }
        let session = start?.session ?? .free
        let resolution = Fold.resolve(inCanonicalOrder: events, startingFrom: session)
        var poison: [UUID] = []
        let initial = domain.state(entityID: entityID, from: start?.state)
        let hasState = start?.state != nil || hasProjection(events)
        let state = hasState ? domain.encode(domain.apply(resolution.effective, to: initial, poison: &poison)) : nil
        return EntityBase(
            entityType: entityType, entityID: entityID, state: state, session: resolution.session, lastKey: last)
    }

    /// The entity rows of the events this log holds past `cursor`.
    func entitiesWithEventsPast(_ cursor: VectorCursor) throws -> Set<Int64> {
        var rows: Set<Int64> = []
        for (feed, head) in try self.cursor().heads where head > cursor[feed] {
            guard let feedRow = try feedRowID(feed, create: false) else { continue }
            var next = cursor[feed] + 1
            while next <= head {
                let page = try feedEvents(feedRow: feedRow, seqs: next...head, limit: 4_096)
                guard let last = page.last else { break }
                for event in page { rows.insert(event.entityRow) }
                next = last.stored.event.seq + 1
            }
        }
        return rows
    }

    /// The events of a feed row with seq in `seqs`, with their entity rows, in seq order.
    func feedEvents(feedRow: Int64, seqs: ClosedRange<UInt64>, limit: Int) throws -> [InsertedEvent] {
        let range = Int64(seqs.lowerBound)...Int64(min(seqs.upperBound, UInt64(Int64.max)))
        let rows = try storedEventsWithEntity(
            "WHERE e.feed = ? AND e.seq BETWEEN ? AND ? ORDER BY e.seq LIMIT ?",
            [.int(feedRow), .int(range.lowerBound), .int(range.upperBound), .int(Int64(limit))])
        let blockSeqs = rows.count == limit ? range.lowerBound...Int64(rows.last!.stored.event.seq) : range
        let blocks = try blockEvents(feedRow: feedRow, seqs: blockSeqs, limit: limit)
        return EventLog.merged(rows, blocks, limit: limit) { Int64($0.stored.event.seq) }
    }

    /// Inside a write transaction, after the checkpoint moved: folds the
    /// entities `rows` (those with events past it) again, from their new bases.
    func refold(_ rows: Set<Int64>, in tail: SyncedTail) throws {
        guard var current = pending else { throw EventLogError.corrupt(path: path, reason: "projections not loaded") }
        pending = nil
        for row in rows.sorted() {
            guard let head = try chainHead(entityRow: row, in: tail), let event = try storedEvent(at: head),
                let domain = domains[event.stored.event.entityType]
            else { continue }
            let stored = try entityHistory(head: head)
            guard !stored.isEmpty else { continue }
            current.states[row] = try freshFold(stored, entityRow: row, domain: domain, poison: &current.poisonOffsets)
            current.heads[row] = head
        }
        pending = current
        try writePending(in: tail)
    }
}

/// The pages of `EventLog.checkpointBasePages(pageSize:)`, each read in its own transaction.
public struct CheckpointBasePages {
    let log: EventLog
    let pageSize: Int
    private var after: (type: String, id: String)?
    private var done = false

    init(log: EventLog, pageSize: Int) {
        self.log = log
        self.pageSize = pageSize
    }

    /// The next page; nil after the last.
    public mutating func next() throws -> [EntityBase]? {
        guard !done else { return nil }
        let page = try log.checkpointBases(after: after, limit: pageSize)
        guard let last = page.last else {
            done = true
            return nil
        }
        after = (last.entityType, last.entityID)
        return page
    }
}
