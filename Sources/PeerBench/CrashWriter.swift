import Foundation
import Replica

/// `peerd-bench crash-writer --data FILE --count N`, for the crash
/// integration test: opens the log at FILE (creating it for replica
/// `crash-writer` when missing) with default options, then appends one
/// item event per transaction, `N` times or until killed. After each
/// append returns (committed, durable) it prints exactly one line
/// `acked <seq> <event_id>` (event id in lowercase) and flushes stdout at
/// once, so every printed event must survive a kill.
///
/// The k-th event is `Created` for item `i<k>` with name `item <k>` and
/// quantity k, where k is the seq it gets: 1, 2, 3, ... on a new file, and
/// continuing after the feed's head on an existing one.
struct CrashWriter {
    /// The database file.
    var dataPath: String
    /// How many events to append.
    var count: Int

    /// Appends and acknowledges until `count` events are written.
    func run() throws {
        let log =
            FileManager.default.fileExists(atPath: dataPath)
            ? try EventLog.open(at: dataPath)
            : try EventLog.create(at: dataPath, replicaID: "crash-writer")
        var head = try log.cursor()[FeedID(replicaID: log.replicaID)]
        for _ in 0..<count {
            let k = head + 1
            let stored = try log.append(NewEvent(item: "i\(k)", .created(name: "item \(k)", quantity: Int64(k))))
            head = stored.event.seq
            print("acked \(stored.event.seq) \(stored.event.eventID.uuidString.lowercased())")
            fflush(nil)
        }
    }
}
