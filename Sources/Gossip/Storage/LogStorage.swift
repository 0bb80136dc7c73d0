import Replica
import SyncProtocol

/// The storage work a `SyncNode` asks for, carried out on one `EventLog`
/// on the caller's thread. `StorageExecutor` runs these on its own threads;
/// `DirectStorage` runs them inline for tests and the simulator.
enum LogStorage {
    /// `.read`: a page of events in canonical order across the ranges'
    /// feeds, each feed's run ending at a signed head, with its proofs.
    static func read(
        _ log: EventLog, ranges: [FeedRange], maxEvents: Int, maxBytes: Int
    ) -> Result<EventPage, StorageFailure> {
        Result {
            try log.signed(
                log.eventsInCanonicalOrder(
                    of: ranges.map { ($0.feed, $0.seqs) }, maxEvents: maxEvents, maxBytes: maxBytes))
        }.mapError(StorageFailure.init)
    }

    /// `.store`: every event of the batches in one transaction, verified
    /// with `keys` when given, and the cursor after it.
    static func store(_ log: EventLog, _ batches: [EventBatch], keys: FeedKeys?) -> Result<StoreOutcome, StorageFailure>
    {
        Result {
            let (events, proofs) = batches.count == 1 ? (batches[0].events, batches[0].proofs) : merged(batches)
            guard let keys else {
                return StoreOutcome(report: try log.ingest(events), cursor: try log.cursor())
            }
            let report = try log.ingest(events, proofs: proofs, keys: keys)
            return StoreOutcome(report: report, cursor: try log.cursor(), signed: log.signedByLastWrite)
        }.mapError(StorageFailure.init)
    }

    /// A run of batches of one session stored as one: per feed, the events
    /// from the last batch where its run does not continue the one before,
    /// with the first such batch's base link and the last batch's head.
    /// A sender skips seqs only when it learned that this replica holds
    /// them (from another peer, meanwhile), so what it sent of the feed
    /// before the skip is held here already, and one run is left to verify.
    static func merged(_ batches: [EventBatch]) -> (events: [Event], proofs: [FeedID: FeedProof]) {
        var runStart: [FeedID: Int] = [:]
        var lastSeq: [FeedID: UInt64] = [:]
        for (index, batch) in batches.enumerated() {
            var firstSeq: [FeedID: UInt64] = [:]
            for event in batch.events where firstSeq[event.feed] == nil { firstSeq[event.feed] = event.seq }
            for (feed, first) in firstSeq where lastSeq[feed].map({ first != $0 + 1 }) ?? true {
                runStart[feed] = index
            }
            for event in batch.events { lastSeq[event.feed] = event.seq }
        }
        var events: [Event] = []
        var proofs: [FeedID: FeedProof] = [:]
        for (index, batch) in batches.enumerated() {
            events += batch.events.filter { index >= runStart[$0.feed] ?? 0 }
            for (feed, proof) in batch.proofs where index >= runStart[feed] ?? 0 {
                proofs[feed] = FeedProof(baseLink: proofs[feed]?.baseLink ?? proof.baseLink, head: proof.head)
            }
        }
        return (events, proofs)
    }

    /// `.compareHeads`: the forks a peer's signed heads prove, quarantined.
    static func compare(_ log: EventLog, _ heads: [SignedHead], keys: FeedKeys) -> Result<[ForkProof], StorageFailure> {
        Result { try log.forks(shownBy: heads, keys: keys) }.mapError(StorageFailure.init)
    }

    /// `.keepCertificates`.
    static func keep(_ log: EventLog, _ certificates: [Certificate]) -> StorageFailure? {
        do {
            try log.storeCertificates(certificates.map { ($0.replicaID, $0.bytes) })
            return nil
        } catch {
            return StorageFailure(error)
        }
    }

    /// `.quarantine`: each proof's feed quarantined in the log.
    static func quarantine(_ log: EventLog, _ proofs: [ForkProof], keys: FeedKeys) -> StorageFailure? {
        do {
            for proof in proofs { try log.quarantineFork(proof, keys: keys.keys(for: proof.feed)) }
            return nil
        } catch {
            return StorageFailure(error)
        }
    }

    /// `.computeState`: the state summary and the cursor it describes, read in one snapshot.
    static func computeState(_ log: EventLog) -> Result<StateReport, StorageFailure> {
        Result {
            try log.snapshot { log in
                let cursor = try log.cursor()
                let count = try log.eventCount()
                guard let hash = StateHash(hex: try log.stateHash()) else {
                    throw StorageFailure("the state hash is not 64 hex digits")
                }
                return StateReport(
                    summary: StateSummary(eventCount: count, hash: hash, domains: try log.domainVersions()),
                    cursor: cursor,
                    heads: try log.signedHeads())
            }
        }.mapError(StorageFailure.init)
    }

    /// `.writePendingProjections`.
    static func writePendingProjections(_ log: EventLog) -> StorageFailure? {
        do {
            try log.writePendingProjections()
            return nil
        } catch {
            return StorageFailure(error)
        }
    }
}

/// The storage work of checkpoints (docs/protocol.md "Checkpoints over the wire").
extension LogStorage {
    /// `.takeCheckpoint`: recomputed from the log's events, taken when it matches.
    static func take(_ log: EventLog, _ checkpoint: SignedCheckpoint) -> Result<TakenCheckpoint, StorageFailure> {
        Result {
            let taking = try log.take(checkpoint.content, statement: checkpoint.bytes)
            return TakenCheckpoint(taking: taking)
        }.mapError(StorageFailure.init)
    }

    /// `.readBases`: nil when the log no longer folds from `checkpoint`; a
    /// page is cut after about `maxBytes` of states.
    static func readBases(
        _ log: EventLog, checkpoint: [UInt8], after: EntityName?, limit: Int, maxBytes: Int
    ) -> Result<[EntityBase]?, StorageFailure> {
        Result {
            try log.snapshot { log in
                guard try log.checkpoint()?.content.id == checkpoint else { return nil }
                var page = try log.checkpointBases(after: after.map { ($0.type, $0.id) }, limit: limit)
                var bytes = 0
                if let cut = page.firstIndex(where: { base in
                    bytes += base.approximateSize
                    return bytes > maxBytes
                }) {
                    page.removeSubrange(max(cut, 1)...)  // never empty: the next page starts after it
                }
                return page
            }
        }.mapError(StorageFailure.init)
    }

    /// `.startFromCheckpoint`: an empty log starts from the checkpoint, or
    /// (`rebase`) the log moves onto it; the cursor after it.
    static func start(_ log: EventLog, _ checkpoint: SignedCheckpoint, bases: [EntityBase], rebase: Bool) -> Result<
        StartedFromCheckpoint, StorageFailure
    > {
        Result {
            var refolded = 0
            if rebase {
                refolded = try log.rebase(onto: checkpoint.content, statement: checkpoint.bytes, bases: bases)
            } else {
                try log.start(from: checkpoint.content, statement: checkpoint.bytes, bases: bases)
            }
            return StartedFromCheckpoint(cursor: try log.cursor(), refolded: refolded)
        }.mapError(StorageFailure.init)
    }

    /// `.keepAcks`.
    static func keep(_ log: EventLog, _ acks: [CheckpointAck]) -> StorageFailure? {
        do {
            try log.storeCheckpointAcks(acks.map { ($0.checkpoint, $0.replicaID, $0.bytes) })
            return nil
        } catch {
            return StorageFailure(error)
        }
    }

    /// `.dropHistory`: the covered events removed and their space freed.
    static func dropHistory(_ log: EventLog, checkpoint: [UInt8]) -> Result<DroppedHistory, StorageFailure> {
        Result {
            guard try log.checkpoint()?.content.id == checkpoint else {
                throw StorageFailure("the log folds from another checkpoint now")
            }
            let dropped = try log.dropCoveredHistory()
            return DroppedHistory(
                checkpoint: checkpoint, events: dropped.events, bytesBefore: dropped.bytesBefore,
                bytesAfter: dropped.bytesAfter)
        }.mapError(StorageFailure.init)
    }
}

extension StorageFailure {
    /// The failure of a storage call, in the words of its error.
    init(_ error: any Error) {
        self = error as? StorageFailure ?? StorageFailure("\(error)", cause: error)
    }
}
