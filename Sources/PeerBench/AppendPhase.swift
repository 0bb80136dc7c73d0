import Replica

extension SizeBenchmark {
    /// Local writes: `EventLog.append([NewEvent])` with `batchSize` item
    /// events per call, into a fresh log. Samples RSS five times as the log grows.
    func appendRate(_ distribution: EntityDistribution, growth: inout [MemoryCheckpoint]) throws -> PhaseResult {
        let name = "EventLog.append, batches of \(batchText), \(distribution.rawValue)"
        let path = workspace.freshDatabase("append-\(distribution)-\(size).db")
        defer { workspace.remove(path) }
        let sampleEvery = max(batchSize, size / 5)
        var samples: [MemoryCheckpoint] = []
        let outcome = try phase(name) {
            let log = try EventLog.create(at: path, replicaID: "bench-local")
            var workload = workload(distribution)
            var watch = Stopwatch()
            var bytes = 0
            var appended = 0
            while true {
                let batch = workload.nextBatch(batchSize).map { NewEvent(item: $0.entityID, $0.event) }
                if batch.isEmpty { break }
                bytes += batch.reduce(0) { $0 + $1.payload.utf8.count }
                try watch.measure { _ = try log.append(batch) }
                let before = appended
                appended += batch.count
                if appended / sampleEvery != before / sampleEvery || appended == size {
                    samples.append(
                        MemoryCheckpoint(
                            size: size, events: appended, residentMiB: ProcessMemory.residentMiB,
                            sqliteHeapMiB: ProcessMemory.sqliteHeapMiB, fileBackedMiB: ProcessMemory.fileBackedMiB,
                            peakMiB: ProcessMemory.peakMiB, databaseBytes: Workspace.fileSize(path),
                            walBytes: Workspace.fileSize(path + "-wal")))
                }
            }
            // The projection rows still pending are part of the work.
            try watch.measure { try log.writePendingProjections() }
            return result(
                events: appended, payloadBytes: bytes, seconds: watch.seconds, cpuSeconds: watch.cpuSeconds,
                note: "\(workload.itemCount) items")
        }
        if distribution == .recentHot { growth += samples }
        return outcome
    }
}
