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
            guard held.historyHeld else { return 0 }
            // Every covered event is folded into the rows before it goes.
            try writePending(in: try syncPending())
            var dropped: Int64 = 0
            for (feed, seq) in held.content.cursor.heads.sorted(by: { $0.key < $1.key }) {
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
                    "SELECT coalesce(sum(last_seq - first_seq + 1), 0) FROM event_blocks WHERE feed = ? AND last_seq <= ?"
                )
                try blocks.bind([.int(row), .int(Int64(seq))])
                if try blocks.step() { dropped += blocks.int64(0) }
                blocks.reset()
                try db.cached("DELETE FROM event_blocks WHERE feed = ? AND last_seq <= ?").run([
                    .int(row), .int(Int64(seq)),
                ])
            }
            // Each entity's chain is rebuilt over the events left, in arrival order, and its head is the newest of them.
            try db.execute(
                """
                UPDATE events SET entity_prev = (
                    SELECT max(p.local_offset) FROM events p
                    WHERE p.entity = events.entity AND p.local_offset < events.local_offset);
                UPDATE entities SET last_offset = (SELECT max(local_offset) FROM events WHERE entity = entities.id)
                    WHERE last_offset IS NOT NULL
                    AND NOT EXISTS (SELECT 1 FROM events e WHERE e.local_offset = entities.last_offset)
                    AND NOT EXISTS (SELECT 1 FROM event_blocks b
                                    WHERE entities.last_offset BETWEEN b.first_offset AND b.last_offset);
                """)
            try db.cached("UPDATE meta SET value = '0' WHERE key = 'history_held'").run()
            keptBlocks = ReadBlockCache()
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
