import Replica
import SyncProtocol

/// The storage work a `SyncNode` asks for, carried out on one `EventLog`
/// on the caller's thread. `StorageExecutor` runs these on its own threads;
/// `DirectStorage` runs them inline for tests and the simulator.
enum LogStorage {
    /// `.read`: a page of events in canonical order across the ranges' feeds.
    static func read(
        _ log: EventLog, ranges: [FeedRange], maxEvents: Int, maxBytes: Int
    ) -> Result<[Event], StorageFailure> {
        Result {
            try log.eventsInCanonicalOrder(
                of: ranges.map { ($0.feed, $0.seqs) }, maxEvents: maxEvents, maxBytes: maxBytes)
        }.mapError(StorageFailure.init)
    }

    /// `.store`: every event of the batches in one transaction, and the cursor after it.
    static func store(_ log: EventLog, _ batches: [EventBatch]) -> Result<StoreOutcome, StorageFailure> {
        Result {
            let report = try log.ingest(batches.flatMap(\.events))
            return StoreOutcome(report: report, cursor: try log.cursor())
        }.mapError(StorageFailure.init)
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
                return StateReport(summary: StateSummary(eventCount: count, hash: hash), cursor: cursor)
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

extension StorageFailure {
    /// The failure of a storage call, in the words of its error.
    init(_ error: any Error) {
        self = error as? StorageFailure ?? StorageFailure("\(error)", cause: error)
    }
}
