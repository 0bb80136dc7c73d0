import Foundation
import Replica

extension SizeBenchmark {
    /// A fresh log started from a checkpoint of `path`'s log instead of
    /// replaying it (docs/operations.md "Checkpoints"): the time to make the
    /// checkpoint at the source's cursor, plus the time to start an empty
    /// log from its bases, read 2,000 at a time from the source. The figure
    /// counts the events the checkpoint covers, so that it compares with the
    /// catch-up row of the same size.
    func checkpointStartRate(from path: String) throws -> PhaseResult {
        let target = workspace.freshDatabase("checkpoint-\(size).db")
        defer { workspace.remove(target) }
        return try phase("EventLog.start from a checkpoint (make + start)") {
            let source = try EventLog.open(at: path)
            let log = try EventLog.create(at: target, replicaID: "bench-checkpoint")
            var watch = Stopwatch()
            let content = try watch.measure { () throws -> CheckpointContent in
                let content = try source.makeCheckpoint()
                _ = try source.take(content, statement: [])
                return content
            }
            let made = watch.seconds
            var pages = source.checkpointBasePages()
            var bytes = 0
            try watch.measure {
                try log.start(from: content, statement: []) {
                    let page = try pages.next()
                    bytes += page?.reduce(0) { $0 + ($1.state?.utf8.count ?? 0) } ?? 0
                    return page
                }
            }
            guard try log.stateHash() == source.stateHash() else {
                throw BenchmarkFailure(
                    description: "the log started from the checkpoint has another state hash than its source")
            }
            return result(
                events: Int(content.cursor.eventCount), payloadBytes: bytes, seconds: watch.seconds,
                cpuSeconds: watch.cpuSeconds,
                note: "\(content.entityCount) entities; make \(String(format: "%.2f", made)) s, start "
                    + "\(String(format: "%.2f", watch.seconds - made)) s; same state hash as the source")
        }
    }
}
