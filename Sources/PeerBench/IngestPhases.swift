import Replica

extension SizeBenchmark {
    /// Remote writes: the events of 4 origin replicas (built before each
    /// call, not timed), interleaved in time order, `batch` (default
    /// `batchSize`) per `EventLog.ingest` call, into a fresh log at `path`
    /// (which later phases read), or a scratch log removed after.
    func ingestRate(into path: String? = nil, folding: Bool = true, batch: Int? = nil) throws -> PhaseResult {
        let batch = batch ?? batchSize
        let database = path ?? workspace.freshDatabase("ingest-scratch-\(folding)-\(batch)-\(size).db")
        defer { if path == nil { workspace.remove(database) } }
        var name = "EventLog.ingest, batches of \(Report.grouped(Double(batch))), 4 origins interleaved"
        if !folding { name += ", no domains (stored, not folded)" }
        var outcome = try phase(name) {
            var options = EventLog.Options()
            if !folding { options.domains = [] }
            let log = try EventLog.create(at: database, replicaID: "bench-receiver", options: options)
            var source = RemoteEventSource(
                workload: workload(.recentHot), origins: 4, wallClockMs: SizeBenchmark.wallClockMs())
            var folds = FoldWorkCounter()
            var watch = Stopwatch()
            var bytes = 0
            var stored = 0
            while true {
                let events = source.nextBatch(batch)
                if events.isEmpty { break }
                bytes += events.reduce(0) { $0 + $1.payload.utf8.count }
                folds.observe(events)
                let report = try watch.measure { try log.ingest(events) }
                try BenchmarkFailure.check(report, offered: events.count)
                stored += report.stored.count
            }
            // The projection rows still pending are part of the work.
            try watch.measure { try log.writePendingProjections() }
            return result(
                events: stored, payloadBytes: bytes, seconds: watch.seconds, cpuSeconds: watch.cpuSeconds,
                note: folding ? folds.summary : "nothing folded")
        }
        outcome.isAnalysis = !folding || batch != batchSize
        return outcome
    }

    /// Reads the whole log at `path` back through
    /// `missingEventPages(for: VectorCursor())`, as a peer with nothing
    /// would be sent it; RSS is sampled after every page.
    func streamRate(from path: String) throws -> PhaseResult {
        var streamed = try phase("missingEventPages(for: VectorCursor()), whole log (read)") {
            let log = try EventLog.open(at: path)
            var watch = Stopwatch()
            var events = 0
            var bytes = 0
            var pageCount = 0
            var maxResident = ProcessMemory.residentMiB
            var pages = try watch.measure { try log.missingEventPages(for: VectorCursor()) }
            while let page = try watch.measure({ try pages.next() }) {
                events += page.count
                bytes += page.reduce(0) { $0 + $1.payload.utf8.count }
                pageCount += 1
                maxResident = max(maxResident, ProcessMemory.residentMiB)
            }
            return result(
                events: events, payloadBytes: bytes, seconds: watch.seconds, cpuSeconds: watch.cpuSeconds,
                note: "\(pageCount) pages; max RSS while streaming \(String(format: "%.0f", maxResident)) MiB")
        }
        streamed.comparesWithRaw = false
        return streamed
    }

    /// A fresh replica catching up from one that holds the log at `path`.
    func catchUpRate(from path: String) throws -> PhaseResult {
        let target = workspace.freshDatabase("catch-up-\(size).db")
        defer { workspace.remove(target) }
        return try phase("EventLog.ingest, catch-up feed by feed (refolds)") {
            let source = try EventLog.open(at: path)
            let log = try EventLog.create(at: target, replicaID: "bench-catch-up")
            var pages = try source.missingEventPages(for: VectorCursor(), maxEvents: batchSize)
            var folds = FoldWorkCounter()
            var watch = Stopwatch()
            var bytes = 0
            var stored = 0
            while let page = try pages.next() {
                bytes += page.reduce(0) { $0 + $1.payload.utf8.count }
                folds.observe(page)
                let report = try watch.measure { try log.ingest(page) }
                try BenchmarkFailure.check(report, offered: page.count)
                stored += report.stored.count
            }
            try watch.measure { try log.writePendingProjections() }
            let foldRate = watch.seconds > 0 ? Double(folds.folded) / watch.seconds : 0
            return result(
                events: stored, payloadBytes: bytes, seconds: watch.seconds, cpuSeconds: watch.cpuSeconds,
                note: folds.summary + "; \(Report.grouped(foldRate)) events folded/s; "
                    + "RSS includes the source log's connection")
        }
    }
}

/// Counts the events `EventLog.ingest` folds, by the rule of
/// `EventLog.foldInserted`: an entity whose new events all sort after the
/// last event folded into it gets them applied on top of its stored state;
/// any other entity (including one seen for the first time) is refolded from
/// its whole stored history.
struct FoldWorkCounter {
    private var held: [String: (count: Int, lastTimeMs: Int64)] = [:]
    /// Events read and applied by the fold, history included.
    private(set) var folded = 0
    /// Events handed to `ingest`.
    private(set) var offered = 0
    /// Times an entity that already had a state was refolded from its history.
    private(set) var refolds = 0

    /// Accounts for one ingested batch.
    mutating func observe(_ batch: [Event]) {
        offered += batch.count
        var byEntity: [String: (count: Int, first: Int64, last: Int64)] = [:]
        for event in batch {
            let seen = byEntity[event.entityID] ?? (0, .max, .min)
            byEntity[event.entityID] = (seen.count + 1, min(seen.first, event.timeMs), max(seen.last, event.timeMs))
        }
        for (entity, new) in byEntity {
            let before = held[entity]
            if let before, new.first > before.lastTimeMs {
                folded += new.count
            } else {
                folded += (before?.count ?? 0) + new.count
                if before != nil { refolds += 1 }
            }
            held[entity] = ((before?.count ?? 0) + new.count, max(before?.lastTimeMs ?? .min, new.last))
        }
    }

    /// E.g. "4,210 refolds; 1.00M events folded (5.2× ingested)".
    var summary: String {
        let factor = offered > 0 ? Double(folded) / Double(offered) : 0
        return "\(Report.grouped(Double(refolds))) refolds; \(Report.grouped(Double(folded))) events folded "
            + "(\(String(format: "%.1f", factor))× ingested)"
    }
}

/// The benchmark's own sanity checks failed: the figures would be meaningless.
struct BenchmarkFailure: Error, CustomStringConvertible {
    var description: String

    /// Every offered event must be stored: the workloads are gap-free and new.
    static func check(_ report: IngestReport, offered: Int) throws {
        guard report.isComplete, report.stored.count == offered, report.duplicates == 0 else {
            throw BenchmarkFailure(
                description: "ingest stored \(report.stored.count) of \(offered) events "
                    + "(duplicates \(report.duplicates), gaps \(report.gaps), forks \(report.forks.count), "
                    + "invalid \(report.invalid))")
        }
    }
}
