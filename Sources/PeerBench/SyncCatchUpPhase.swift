import Foundation
import Gossip
import Replica
import SyncProtocol

/// Catch-up of a fresh replica over loopback TCP between two real `peerd
/// run` processes: A holds `events` events of 4 origin feeds, B starts
/// empty in A's cluster (`peerd init --join`), dials A, and is timed from
/// its launch until its database holds every event.
struct SyncCatchUpBenchmark {
    /// Events in A.
    let events: Int
    /// The `peerd` binary.
    let peerd: String
    /// Where the data directories go.
    let workspace: Workspace

    /// Builds A once, then `times` catch-ups of a fresh B, each right after
    /// its own run of `rawBaseline`: the machine's speed drifts between
    /// minutes, and a pair measured back to back drifts least.
    func run(times: Int, rawBaseline: () throws -> PhaseResult) throws -> CatchUpSeries {
        let sourceDirectory = workspace.file("sync-source")
        workspace.discard(sourceDirectory)
        defer { workspace.discard(sourceDirectory) }
        var built = CatchUpResult(events: events)
        let key = ClusterKey.generate()
        try buildSource(in: sourceDirectory, key: key, result: &built)
        built.pipeline = try SyncPipelineAnalysis(
            sourcePath: (sourceDirectory as NSString).appendingPathComponent("replica.db"), events: events,
            clusterKey: key, workspace: workspace
        ).run()
        let times = max(1, times)
        var pairs: [CatchUpPair] = []
        for index in 1...times {
            let raw = try rawBaseline()
            progress("catch-up \(index) of \(times) ...")
            let catchUp = try catchUp(from: sourceDirectory, key: key, result: built)
            pairs.append(CatchUpPair(raw: raw, catchUp: catchUp))
        }
        return CatchUpSeries(pairs: pairs)
    }

    /// One catch-up of a fresh B from A's directory.
    private func catchUp(from sourceDirectory: String, key: ClusterKey, result built: CatchUpResult) throws
        -> CatchUpResult
    {
        let receiverDirectory = workspace.file("sync-receiver")
        workspace.discard(receiverDirectory)
        defer { workspace.discard(receiverDirectory) }
        var result = built

        try LoggedChild.run(peerd, ["init", "--data", receiverDirectory, "--join", key.code])
        let source = try LoggedChild(
            name: "A (source)", peerd,
            ["run", "--data", sourceDirectory, "--listen", "127.0.0.1:0", "--no-mdns", "--http", "off"],
            logPath: workspace.file("sync-source.log"))
        defer { source.stop() }
        let sourceAddress = try source.waitForLines(startingWith: ["listening on "])[0]
        let counter = try ReadOnlyEventCounter(
            path: (receiverDirectory as NSString).appendingPathComponent("replica.db"))

        progress("catch-up: B joins A (\(sourceAddress)) and fetches \(Report.grouped(Double(events))) events ...")
        let start = ContinuousClock.now
        let receiver = try LoggedChild(
            name: "B (fresh replica)", peerd,
            [
                "run", "--data", receiverDirectory, "--listen", "127.0.0.1:0", "--no-mdns", "--http", "off", "--peer",
                sourceAddress,
            ],
            logPath: workspace.file("sync-receiver.log"))
        defer { receiver.stop() }
        _ = try receiver.waitForLines(startingWith: ["listening on "])
        result.receiverListeningSeconds = (ContinuousClock.now - start).seconds

        var lastReport = ContinuousClock.now
        let deadline = max(300.0, Double(events) / 1_000)
        try waitUntil("B to hold \(events) events", seconds: deadline, pollMs: 100) {
            try source.checkRunning()
            try receiver.checkRunning()
            let held = try counter.count()
            let elapsed = (ContinuousClock.now - start).seconds
            result.timeline.append((elapsed, held))
            if held > 0 && result.firstEventSeconds == nil { result.firstEventSeconds = elapsed }
            result.sourceMaxResidentMiB = max(result.sourceMaxResidentMiB, source.sample().residentMiB)
            result.receiverMaxResidentMiB = max(result.receiverMaxResidentMiB, receiver.sample().residentMiB)
            if ContinuousClock.now - lastReport > .seconds(10) {
                lastReport = ContinuousClock.now
                progress(
                    String(format: "catch-up: %.0f s, B holds %@ events", elapsed, Report.grouped(Double(held))))
            }
            return held >= events
        }
        result.seconds = (ContinuousClock.now - start).seconds
        result.source = source.sample()
        result.receiver = receiver.sample()
        try waitUntil("B to write its projection rows", seconds: 60, pollMs: 100) {
            try receiver.checkRunning()
            return try counter.projectionRowsLag() == 0
        }
        result.projectionsWrittenSeconds = (ContinuousClock.now - start).seconds
        progress(
            String(
                format: "catch-up: %@ events in %.1f s = %@ events/s", Report.grouped(Double(events)),
                result.seconds, Report.grouped(Double(events) / result.seconds)))
        receiver.stop()
        source.stop()
        try compareStates(sourceDirectory, receiverDirectory, result: &result)
        return result
    }

    /// A's data directory: a new cluster key and a log holding `events`
    /// events of 4 origins, ingested in batches of 10,000 (not timed as sync).
    private func buildSource(in directory: String, key: ClusterKey, result: inout CatchUpResult) throws {
        let filled = try Self.buildSource(in: directory, key: key, events: events, label: "catch-up")
        result.payloadBytes = filled.payloadBytes
        result.buildSeconds = filled.seconds
        result.feeds = filled.feeds
    }

    /// A's data directory for `peerd run`: `key` and a signing log of `events` events of 4 origin feeds.
    static func buildSource(in directory: String, key: ClusterKey, events: Int, label: String) throws
        -> (payloadBytes: Int, seconds: Double, feeds: Int)
    {
        progress("\(label): building A with \(Report.grouped(Double(events))) events (4 origin feeds) ...")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try key.write(toFile: (directory as NSString).appendingPathComponent("cluster.key"))
        return try ingestOriginFeeds(events: events, into: signingSourceLog(in: directory))
    }

    /// A's log, `bench-source`, whose feeds it signs with the identity key
    /// in `directory` (the key `peerd run` then shows): its peers verify
    /// every event, as they would a daemon's own.
    static func signingSourceLog(in directory: String) throws -> EventLog {
        let key = try SigningKey.readOrCreate(atPath: (directory as NSString).appendingPathComponent("identity.key"))
        var options = EventLog.Options()
        options.feedSigner = FeedSigner(key)
        return try EventLog.create(
            at: (directory as NSString).appendingPathComponent("replica.db"), replicaID: "bench-source",
            options: options)
    }

    /// Ingests `events` events of 4 feeds of `log`'s own replica (scopes
    /// `origin-1` ...
    static func ingestOriginFeeds(events: Int, into log: EventLog) throws
        -> (payloadBytes: Int, seconds: Double, feeds: Int)
    {
        var source = RemoteEventSource(
            workload: ItemWorkload(eventCount: events, maxItems: 20_000, distribution: .recentHot), origins: 4,
            wallClockMs: SizeBenchmark.wallClockMs(), replicaID: log.replicaID)
        var watch = Stopwatch()
        var payloadBytes = 0
        while true {
            let batch = source.nextBatch(10_000)
            if batch.isEmpty { break }
            payloadBytes += batch.reduce(0) { $0 + $1.payload.utf8.count }
            let report = try watch.measure { try log.ingest(batch) }
            try BenchmarkFailure.check(report, offered: batch.count)
        }
        try watch.measure { try log.writePendingProjections() }
        return (payloadBytes, watch.seconds, source.feeds.count)
    }

    /// Whether B folded to the same state as A.
    private func compareStates(_ source: String, _ receiver: String, result: inout CatchUpResult) throws {
        let a = try EventLog.open(at: (source as NSString).appendingPathComponent("replica.db"))
        let b = try EventLog.open(at: (receiver as NSString).appendingPathComponent("replica.db"))
        result.statesMatch = try a.stateHash() == b.stateHash() && a.eventCount() == b.eventCount()
    }
}

/// A catch-up and the raw ingest baseline measured just before it.
struct CatchUpPair {
    var raw: PhaseResult
    var catchUp: CatchUpResult

    /// Catch-up events/s over the baseline's rows/s.
    var ratio: Double { catchUp.eventsPerSecond / max(raw.eventsPerSecond, 1e-9) }
}

/// Every catch-up of a run, in order.
struct CatchUpSeries {
    var pairs: [CatchUpPair]

    /// The pair with the median ratio (the lower middle one of an even count).
    var median: CatchUpPair { pairs.sorted { $0.ratio < $1.ratio }[(pairs.count - 1) / 2] }
}

/// What the catch-up measured.
struct CatchUpResult {
    /// Bytes a sealed frame adds to its plaintext: the 5-byte header and the AEAD tag.
    static let sealedFrameOverhead = Frame.headerSize + (Frame.maximumSize - 1 - FrameSealer.maximumPlaintextSize)

    var events: Int
    var feeds = 0
    var payloadBytes = 0
    /// The same session replayed in process: stage costs and the exact wire bytes.
    var pipeline = PipelineResult()
    /// Building A in process (ingest in batches of 10,000), not part of the sync figures.
    var buildSeconds = 0.0
    /// From launching B until B's database held every event.
    var seconds = 0.0
    var receiverListeningSeconds = 0.0
    var firstEventSeconds: Double?
    /// From launching B until B had also written every projection row
    /// (`meta.projected_offset` at its newest event; reads fold the rest before).
    var projectionsWrittenSeconds: Double?
    /// (seconds since B's launch, events B held), every ~100 ms.
    var timeline: [(seconds: Double, events: Int)] = []
    var source = ChildStats(pid: -1)
    var receiver = ChildStats(pid: -1)
    var sourceMaxResidentMiB = 0.0
    var receiverMaxResidentMiB = 0.0
    var statesMatch = false

    init(events: Int) { self.events = events }

    var eventsPerSecond: Double { seconds > 0 ? Double(events) / seconds : 0 }
    /// Sealed frames A sends B in the session (from the in-process replay).
    var wireBytes: Int { pipeline.bytesToTarget }
    var wireMBPerSecond: Double { seconds > 0 ? Double(wireBytes) / 1e6 / seconds : 0 }
    var payloadMBPerSecond: Double { seconds > 0 ? Double(payloadBytes) / 1e6 / seconds : 0 }

    /// Events per second over each quarter of the events (by when B reached 25%, 50%, 75%, 100%).
    var quarterRates: [Double] {
        var rates: [Double] = []
        var previous = (seconds: 0.0, events: 0)
        for quarter in 1...4 {
            let target = events * quarter / 4
            guard let reached = timeline.first(where: { $0.events >= target }) else { break }
            let span = reached.seconds - previous.seconds
            rates.append(span > 0 ? Double(reached.events - previous.events) / span : .infinity)
            previous = reached
        }
        return rates
    }
}

/// A read-only connection to another process's replica database, asking
/// only how many events it holds (the sum of its feed heads: a few rows).
final class ReadOnlyEventCounter {
    private let db: SQLiteConnection

    init(path: String) throws { db = try SQLiteConnection(path: path, readOnly: true) }

    /// Events held now.
    func count() throws -> Int { Int(try db.scalar("SELECT coalesce(sum(head_seq), 0) FROM feeds")) }

    /// How many events the projection rows lag behind the newest event.
    func projectionRowsLag() throws -> Int64 {
        try db.scalar(
            """
            SELECT max((SELECT coalesce(max(local_offset), 0) FROM events),
                       (SELECT coalesce(max(last_offset), 0) FROM event_blocks))
                   - (SELECT value FROM meta WHERE key = 'projected_offset')
            """)
    }
}
