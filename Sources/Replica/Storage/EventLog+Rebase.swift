/// Moving a log onto a checkpoint whose covered events it lacks and no
/// peer holds any more (docs/storage.md "Rebasing onto a checkpoint").
extension EventLog {
    /// Moves this log, which may hold events, onto `content`: the events it
    /// covers go, the bases become the entities' state, each feed's head is
    /// at least the checkpoint's (its link there the checkpoint's), and the
    /// events it does not cover fold on top, exactly as on every replica
    /// that folds from it. The log then holds nothing at or below the
    /// checkpoint, as one that started from it. A log that took the
    /// checkpoint already is left as it is.
    ///
    /// The bases must be in `(type, id)` order and match the content's
    /// entity count, state hash and base digest; otherwise nothing changes.
    ///
    /// - Throws: `CheckpointError.mismatch` when the bases do not match.
    /// - Returns: the entities folded again on top of their bases.
    @discardableResult
    public func rebase(onto content: CheckpointContent, statement: [UInt8], bases: [EntityBase]) throws -> Int {
        try write {
            try writePending(in: try syncPending())
            if try isStored(content) { return 0 }
            var digests = BaseDigests()
            for base in bases where !digests.add(base) {
                throw CheckpointError.mismatch(
                    checkpoint: Hex.string(content.id), madeBy: content.madeBy,
                    detail: "its bases are not in (type, id) order")
            }
            guard digests.count == content.entityCount, digests.stateHash() == content.stateHash,
                digests.baseDigest() == content.baseDigest
            else {
                throw CheckpointError.mismatch(
                    checkpoint: Hex.string(content.id), madeBy: content.madeBy,
                    detail: "the bases received do not fold to its state hash and digest")
            }
            _ = try deleteEvents(coveredBy: content.cursor)
            for feed in content.cursor.feeds {
                let row = try feedRowID(feed, create: true)!
                guard try headSeq(feedRow: row) < content.cursor[feed] else { continue }
                try setHead(content.cursor[feed], link: content.links[feed] ?? FeedChain.genesis, feedRow: row)
            }
            try relinkEntityChains()
            // Every entity's state is its base now (none: no state), then the events after it fold on top.
            try db.execute(
                """
                DELETE FROM entity_bases;
                UPDATE entities SET state = NULL, holder = NULL WHERE state IS NOT NULL OR holder IS NOT NULL;
                """)
            for base in bases { try writeBase(base) }
            try store(content, statement: statement, historyHeld: false)
            keptBlocks = ReadBlockCache()
            writtenRows = WrittenRows()
            pending = nil
            let past = try entitiesWithEventsPast(content.cursor)
            try refold(past, in: try syncPending())
            return past.count
        }
    }
}
