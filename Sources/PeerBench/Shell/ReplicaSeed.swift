import Foundation
import Replica

/// Fills a data directory that `peerd init` made, before its daemon
/// starts, through the `Replica` module in this process: the on-disk
/// format is stable across daemon versions, so the same seed serves an
/// old and a new `peerd`. The log is closed again on return.
enum ReplicaSeed {
    /// The database of a data directory.
    static func database(in data: String) -> String { (data as NSString).appendingPathComponent("replica.db") }

    /// Appends `events` events of 4 foreign origin feeds (ingested in
    /// batches of 10,000, as peers would send them); returns the seconds it took.
    static func ingestOriginFeeds(events: Int, into data: String) throws -> Double {
        let log = try EventLog.open(at: database(in: data))
        return try SyncCatchUpBenchmark.ingestOriginFeeds(events: events, into: log).seconds
    }

    /// Creates `count` items of this replica (`Created` events, appended in
    /// batches of 1,000); returns their ids.
    static func createItems(_ count: Int, in data: String) throws -> [String] {
        let log = try EventLog.open(at: database(in: data))
        var random = SplitMix64(seed: ItemWorkload.seed ^ 0x4954_454D)
        var ids: [String] = []
        ids.reserveCapacity(count)
        while ids.count < count {
            var batch: [NewEvent] = []
            for _ in 0..<min(1_000, count - ids.count) {
                let id = random.uuid().uuidString.lowercased()
                ids.append(id)
                let quantity = Int64(random.next() % 1_000)
                batch.append(NewEvent(item: id, .created(name: "Seed item \(ids.count)", quantity: quantity)))
            }
            try log.append(batch)
        }
        try log.writePendingProjections()
        return ids
    }
}
