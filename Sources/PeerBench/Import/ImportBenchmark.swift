import ChildProcesses
import Foundation
import Replica

/// `peerd-bench import`: `peerd import FILE` as a real process against the
/// same events stored in this process, so the import reads next to the
/// catch-up rate it should reach (issue 16).
struct ImportBenchmark {
    var events = 1_000_000
    /// Catch-up pages: `SyncSession.Configuration.batchEvents`.
    var batch = 5_000
    /// Each binary gets its own `peerd import` row (e.g. before and after a change).
    var peerds: [String] = []
    var directory: String?
    func run() throws {
        let workspace = try Workspace(directory: directory)
        defer { workspace.finish() }
        let workload = ImportWorkload(events: events, wallClockMs: SizeBenchmark.wallClockMs())
        progress("peerd-bench import: \(events) events, work directory \(workspace.path)")

        let file = workspace.file("import.ndjson")
        // Kept in a --dir work directory, for profiling `peerd import` on it.
        defer { if directory == nil { workspace.discard(file) } }
        let fileBytes = try workload.writeNDJSON(to: file)
        progress("import: wrote \(fileBytes) bytes of NDJSON; raw SQLite ...")
        let (raw, rawCPU) = try workload.rawInsert(batch: batch, workspace: workspace, name: "import-raw.db")
        progress("import: EventLog.ingest in batches of \(batch) ...")
        let (ingest, ingestCPU) = try ingestSeconds(workload, workspace: workspace)
        progress("import: a source replica's `peerd export` of the same events ...")
        let signed = try signedExport(peerd: peerds[0], workspace: workspace)
        defer { if directory == nil { workspace.discard(signed.file) } }
        let batchText = Report.grouped(Double(batch))
        var rows: [(name: String, seconds: Double, extra: [String])] = [
            (
                "raw SQLite insert (integer primary key only), batches of \(batchText)", raw,
                ["", Figure.fixed(rawCPU, 1)]
            ),
            (
                "EventLog.ingest in process, batches of \(batchText) (catch-up)", ingest,
                ["", Figure.fixed(ingestCPU, 1)]
            ),
        ]
        for peerd in peerds {
            let binary = peerds.count > 1 ? " (\(peerd))" : ""
            let paths: [(String, String, String, String?)] = [
                ("own feeds, no signed heads (a migration's file)", file, ImportWorkload.replicaID, nil),
                ("own feeds, its own `peerd export` (signed heads)", signed.file, signed.replicaID, signed.identityKey),
                ("another replica's `peerd export` (verified)", signed.file, "bench-receiver", nil),
            ]
            for (what, file, replicaID, key) in paths {
                progress("import: \(peerd) import, \(what) ...")
                let run = try importRun(
                    peerd: peerd, file: file, replicaID: replicaID, identityKey: key, workspace: workspace)
                rows.append(
                    (
                        "`peerd import FILE`, \(what)\(binary)", run.seconds,
                        [Figure.fixed(run.peakMiB, 0), Figure.fixed(run.cpuSeconds, 1)]
                    ))
            }
        }
        let table = MarkdownTable.rates("what", events: events, raw: raw, extra: ["peak RSS MiB", "CPU s"], rows)
        Markdown.emit(
            Markdown.heading(
                "import: \(Report.grouped(Double(events))) events",
                [
                    "file: \(Figure.fixed(Double(fileBytes) / 1e6, 1)) MB of NDJSON as `peerd export` writes it, "
                        + "\(Figure.fixed(Double(fileBytes) / Double(events), 0)) bytes a line, 4 origin feeds "
                        + "interleaved, item payloads",
                    "CPU s: process CPU time (user + system) in the timed calls; for `peerd import`, utime + stime of "
                        + "the child (all its threads), and peak RSS its VmHWM (both sampled every 20 ms until it exits)",
                    "`peerd import` rows: whole processes into a fresh data directory; the signed file is "
                        + "`peerd export` of a replica that holds the same workload as its own 4 feeds "
                        + "(\(Figure.fixed(Double(signed.bytes) / 1e6, 1)) MB with its certificate and signed heads)",
                ]) + table.lines)
    }

    /// `EventLog.ingest` of the same events into a fresh log, as sync catch-up calls it.
    private func ingestSeconds(_ workload: ImportWorkload, workspace: Workspace) throws -> (Double, cpu: Double) {
        let path = workspace.freshDatabase("import-ingest.db")
        defer { workspace.remove(path) }
        let log = try EventLog.create(at: path, replicaID: ImportWorkload.replicaID)
        let watch = try workload.ingest(into: log, batch: batch)
        return (watch.seconds, watch.cpuSeconds)
    }

    /// A replica `bench-source` holding the workload as its own 4 feeds
    /// (signed as it stored them), exported by `peerd export` (a child
    /// process): the file, its size, and the replica's id and key file.
    private func signedExport(peerd: String, workspace: Workspace) throws
        -> (file: String, bytes: Int, replicaID: String, identityKey: String)
    {
        let source = try workspace.freshDirectory("import-source")
        defer { workspace.discard(source) }
        let log = try SyncCatchUpBenchmark.signingSourceLog(in: source)
        _ = try SyncCatchUpBenchmark.ingestOriginFeeds(events: events, into: log)
        let file = workspace.file("import-signed.ndjson")
        try LoggedChild.run(peerd, ["export", file, "--data", source])
        let key = workspace.file("import-source.key")
        workspace.discard(key)
        try FileManager.default.copyItem(
            atPath: (source as NSString).appendingPathComponent("identity.key"), toPath: key)
        return (file, Int(Workspace.fileSize(file)), log.replicaID, key)
    }

    /// `peerd import FILE` into a fresh data directory of replica
    /// `replicaID` (with the identity key in `identityKey`, else a new one);
    /// the time is taken around the child process, from its start to its exit.
    private func importRun(
        peerd: String, file: String, replicaID: String, identityKey: String? = nil, workspace: Workspace
    ) throws -> ImportRun {
        let data = try workspace.freshDirectory("import-data")
        defer { workspace.discard(data) }
        // Made here with the replica id wanted, as `peerd init` would make it with a new one: for the
        // own-feed rows the importer is the events' origin, and signs them as it imports them.
        _ = try EventLog.create(at: (data as NSString).appendingPathComponent("replica.db"), replicaID: replicaID)
        if let identityKey {
            try FileManager.default.copyItem(
                atPath: identityKey, toPath: (data as NSString).appendingPathComponent("identity.key"))
        }
        let run = try LoggedChild.timed(
            name: "peerd import", peerd, ["import", file, "--data", data], logPath: workspace.file("import.log"))
        guard run.stdout.contains("imported \(events) new events, 0 already held") else {
            throw ChildProcessError("peerd import: \(run.stdout)")
        }
        return ImportRun(seconds: run.seconds, peakMiB: run.last.peakMiB, cpuSeconds: run.last.cpuSeconds)
    }
}

/// One `peerd import` child: wall time, and its last `/proc` sample before it exited.
struct ImportRun {
    var seconds: Double
    var peakMiB: Double
    var cpuSeconds: Double
}

/// The events of the import benchmark: the catch-up workload of
/// `peerd-bench sync` (recent items hot, 20,000 items, 4 origin feeds
/// interleaved), regenerated from the same seed for every row.
struct ImportWorkload {
    /// The replica whose feeds the events are, and which imports them.
    static let replicaID = "bench-import"
    let events: Int
    let wallClockMs: Int64
    /// The replica whose own feeds the events are.
    var origin = ImportWorkload.replicaID
    /// The events' entity type: `item`, or one that folds Item's declared twin.
    var entityType = Item.entityType

    /// Calls `body` with the events in batches of `size`, in export order.
    func forEachBatch(_ size: Int, _ body: ([Event]) throws -> Void) throws {
        var source = RemoteEventSource(
            workload: ItemWorkload(eventCount: events, maxItems: 20_000, distribution: .recentHot), origins: 4,
            wallClockMs: wallClockMs, replicaID: origin)
        while true {
            var batch = source.nextBatch(size)
            if batch.isEmpty { break }
            if entityType != Item.entityType {
                for index in batch.indices { batch[index].entityType = entityType }
            }
            try body(batch)
        }
    }

    /// Writes every event as `peerd export` writes it (this node's offset
    /// and arrival time included); returns the file's size in bytes.
    func writeNDJSON(to path: String) throws -> Int {
        guard FileManager.default.createFile(atPath: path, contents: nil),
            let handle = FileHandle(forWritingAtPath: path)
        else { throw ChildProcessError("cannot write \(path)") }
        defer { try? handle.close() }
        var offset: Int64 = 0
        var bytes = 0
        try forEachBatch(10_000) { batch in
            var text = ""
            for event in batch {
                offset += 1
                text += EventJSON.line(for: event, offset: offset, arrivalTimeMs: wallClockMs + offset / 100) + "\n"
            }
            let data = Data(text.utf8)
            bytes += data.count
            try handle.write(contentsOf: data)
        }
        return bytes
    }

    /// Raw SQLite inserting the rows of the events in batches of `batch`
    /// into a fresh database `name` (the baseline of a run): wall and CPU seconds.
    func rawInsert(batch: Int, workspace: Workspace, name: String) throws -> (seconds: Double, cpu: Double) {
        let watch = try RawEventTable.timedInsert(workspace: workspace, name: name) { insert in
            try forEachBatch(batch) { try insert($0.map(rawRow)) }
        }
        return (watch.seconds, watch.cpuSeconds)
    }

    /// `EventLog.ingest` of every event into `log` in batches of `batch`, as
    /// sync catch-up calls it, then the pending projection rows written.
    func ingest(into log: EventLog, batch: Int) throws -> Stopwatch {
        var watch = Stopwatch()
        try forEachBatch(batch) { events in
            let report = try watch.measure { try log.ingest(events) }
            try BenchmarkFailure.check(report, offered: events.count)
        }
        try watch.measure { try log.writePendingProjections() }
        return watch
    }

    /// The raw baseline's row of `event`: its feed's number, its item as the entity.
    func rawRow(_ event: Event) -> RawRow {
        let origin = Int64(event.feed.replicaID.dropFirst("origin-".count)) ?? 0
        return RawRow(
            feed: origin, seq: Int64(event.seq), eventID: withUnsafeBytes(of: event.eventID.uuid) { Array($0) },
            timeMs: event.timeMs, entity: (Int64(event.entityID.dropFirst()) ?? 0) + 1, entityID: event.entityID,
            payload: event.payload, arrivalMs: wallClockMs)
    }
}
