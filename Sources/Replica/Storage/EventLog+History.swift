/// Dropping the history a checkpoint covers, and the acknowledgements
/// that decide when (docs/storage.md "Dropping history").
extension EventLog {
    /// What `dropCoveredHistory()` did.
    public struct DroppedEvents: Hashable, Sendable {
        /// The events removed.
        public var events: Int
        /// The database's size before and after (pages × page size).
        public var bytesBefore: Int64
        public var bytesAfter: Int64
    }

    /// Removes every event the checkpoint this log folds from covers, then
    /// gives their space back to the file system (`VACUUM`, then a WAL
    /// checkpoint that truncates the WAL). The entities'
    /// state does not change: it is their bases with the later events on
    /// top, as before. From then on the log serves the checkpoint and the
    /// events after it, like a log that started from it. The caller decides
    /// that every member acknowledged the checkpoint.
    ///
    /// A block of events that reaches past the checkpoint stays whole.
    ///
    /// - Throws: `CheckpointError.notApplicable` without a checkpoint.
    public func dropCoveredHistory() throws -> DroppedEvents {
        let before = try databaseBytes()
        let dropped: Int = try write {
            guard let held = try checkpoint() else {
                throw CheckpointError.notApplicable("this log holds no checkpoint")
            }
            guard !held.historyDropped else { return 0 }
            // Every covered event is folded into the rows before it goes.
            try writePending(in: try syncPending())
            let dropped = try deleteEvents(coveredBy: held.content.cursor)
            // Each entity's chain is rebuilt over the events left, and its head is the newest of them.
            try relinkEntityChains()
            try setHistoryFloor(held.content)
            // The chains and heads were rewritten here, past the caches.
            keptBlocks = ReadBlockCache()
            writtenRows = WrittenRows()
            pending = nil
            return Int(dropped)
        }
        try EventLog.withWrappedErrors(path: path) {
            try db.execute("VACUUM")
            // In WAL mode the rewritten file lands in the WAL: copy it back and cut the WAL,
            // or the disk would hold the old file and the new one side by side.
            try db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        }
        return DroppedEvents(events: dropped, bytesBefore: before, bytesAfter: try databaseBytes())
    }

    /// Inside a write transaction: deletes every event at or below
    /// `cursor`, rows and the blocks it covers whole (a block that reaches
    /// past it stays), with their poison marks, and raises the history
    /// offset past them, so that their offsets are never served or taken
    /// again. Returns how many events went. The chains are not relinked.
    func deleteEvents(coveredBy cursor: VectorCursor) throws -> Int64 {
        var dropped: Int64 = 0
        for (feed, seq) in cursor.heads.sorted(by: { $0.key < $1.key }) {
            guard let row = try feedRowID(feed, create: false) else { continue }
            let highest = try db.scalarInt(
                """
                SELECT max(coalesce((SELECT max(local_offset) FROM events WHERE feed = ?1 AND seq <= ?2), 0),
                           coalesce((SELECT max(last_offset) FROM event_blocks WHERE feed = ?1 AND last_seq <= ?2), 0))
                """, [.int(row), .int(Int64(seq))])
            try raiseHistoryOffset(to: highest ?? 0)
            try db.cached(
                "DELETE FROM poison WHERE local_offset IN (SELECT local_offset FROM events WHERE feed = ? AND seq <= ?)"
            ).run([.int(row), .int(Int64(seq))])
            try db.cached("DELETE FROM events WHERE feed = ? AND seq <= ?").run([.int(row), .int(Int64(seq))])
            dropped += try db.scalarInt("SELECT changes()") ?? 0
            let blocks = try db.cached(
                "SELECT coalesce(sum(last_seq - first_seq + 1), 0) FROM event_blocks WHERE feed = ? AND last_seq <= ?")
            try blocks.bind([.int(row), .int(Int64(seq))])
            if try blocks.step() { dropped += blocks.int64(0) }
            blocks.reset()
            let covered: [SQLiteValue] = [.int(row), .int(Int64(seq))]
            try db.cached("DELETE FROM event_blocks WHERE feed = ? AND last_seq <= ?").run(covered)
        }
        return dropped
    }

    /// Inside a write transaction, after events were deleted: every event
    /// left names the previous event of its entity that is left as its
    /// `entity_prev`, in rows and block entries alike, and each entity's
    /// chain head is its newest event left (NULL when none is: its base is
    /// its state). Blocks are rewritten only here, when history goes.
    func relinkEntityChains() throws {
        var links: [(offset: Int64, entity: Int64, previous: Int64?)] = []
        let rows = try db.statement("SELECT local_offset, entity, entity_prev FROM events")
        while try rows.step() {
            links.append((rows.int64(0), rows.int64(1), rows.isNull(2) ? nil : rows.int64(2)))
        }
        var blocks: [(firstOffset: Int64, entries: [EventBlock.Entry])] = []
        let blockRows = try db.statement("SELECT first_offset, events FROM event_blocks")
        while try blockRows.step() {
            let first = blockRows.int64(0)
            guard let entries = EventBlock.entries(of: blockRows.text(1)) else {
                throw EventLogError.corrupt(path: path, reason: "the block at offset \(first) cannot be read")
            }
            blocks.append((first, entries))
            for (index, entry) in entries.enumerated() {
                links.append((first + Int64(index), entry.entityRow, entry.entityPrev))
            }
        }
        links.sort { $0.offset < $1.offset }
        var newest: [Int64: Int64] = [:]
        var relinked: [Int64: Int64?] = [:]
        for link in links {
            let previous = newest[link.entity]
            if previous != link.previous { relinked[link.offset] = previous }
            newest[link.entity] = link.offset
        }
        for block in blocks {
            var entries = block.entries
            var changed = false
            for index in entries.indices {
                guard let previous = relinked.removeValue(forKey: block.firstOffset + Int64(index)) else { continue }
                entries[index].entityPrev = previous
                changed = true
            }
            guard changed else { continue }
            try db.cached("UPDATE event_blocks SET events = ? WHERE first_offset = ?").run([
                .text(EventBlock.text(of: entries)), .int(block.firstOffset),
            ])
        }
        for (offset, previous) in relinked {
            try db.cached("UPDATE events SET entity_prev = ? WHERE local_offset = ?").run([
                previous.map { .int($0) } ?? .null, .int(offset),
            ])
        }
        var heads: [(entity: Int64, head: Int64?)] = []
        let entities = try db.statement("SELECT id, last_offset FROM entities WHERE last_offset IS NOT NULL")
        while try entities.step() {
            let entity = entities.int64(0)
            if newest[entity] != entities.int64(1) { heads.append((entity, newest[entity])) }
        }
        for (entity, head) in heads {
            try db.cached("UPDATE entities SET last_offset = ? WHERE id = ?").run([
                head.map { .int($0) } ?? .null, .int(entity),
            ])
        }
    }

    /// Keeps acknowledgements of checkpoints (`checkpoint` id, `replica`,
    /// the signed bytes); one per replica and checkpoint.
    public func storeCheckpointAcks(_ acks: [(checkpoint: [UInt8], replica: String, bytes: [UInt8])]) throws {
        guard !acks.isEmpty else { return }
        try write {
            let insert = try db.cached(
                "INSERT OR IGNORE INTO checkpoint_acks (checkpoint, replica, ack) VALUES (?, ?, ?)")
            for ack in acks { try insert.run([.blob(ack.checkpoint), .text(ack.replica), .blob(ack.bytes)]) }
            // Acknowledgements of checkpoints older than the one held are of no use.
            if let held = try checkpoint() {
                try db.cached(
                    """
                    DELETE FROM checkpoint_acks WHERE checkpoint IN
                        (SELECT id FROM checkpoints WHERE id <> ? AND made_ms <= ?)
                    """
                ).run([.blob(held.content.id), .int(held.content.madeMs)])
            }
        }
    }

    /// The acknowledgements kept, as signed bytes.
    public func checkpointAcks() throws -> [[UInt8]] {
        try read {
            let statement = try db.cached("SELECT ack FROM checkpoint_acks ORDER BY checkpoint, replica")
            defer { statement.reset() }
            var acks: [[UInt8]] = []
            while try statement.step() { acks.append(statement.blob(0)) }
            return acks
        }
    }

    /// The statements of the checkpoints this log took, oldest first (the
    /// held one last): the chain it shows its peers.
    public func checkpointStatements() throws -> [[UInt8]] {
        try read {
            let statement = try db.cached("SELECT statement FROM checkpoints ORDER BY made_ms, taken_ms")
            defer { statement.reset() }
            var statements: [[UInt8]] = []
            while try statement.step() { statements.append(statement.blob(0)) }
            return statements
        }
    }

    /// The database's size: its pages times the page size.
    public func databaseBytes() throws -> Int64 {
        try read {
            (try db.scalarInt("PRAGMA page_count") ?? 0) * (try db.scalarInt("PRAGMA page_size") ?? 0)
        }
    }
}
