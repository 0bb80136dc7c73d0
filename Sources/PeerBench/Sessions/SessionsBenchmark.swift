import Foundation
import Replica

/// `peerd-bench sessions`: what single-writer sessions cost
/// (docs/sessions.md).
struct SessionsBenchmark {
    var events = 200_000
    var entities = 1_000
    var claims = 200
    var batch = 1_000
    var peerd: String
    var directory: String?
    func run() throws {
        let workspace = try Workspace(directory: directory)
        defer { workspace.finish() }
        progress("peerd-bench sessions: \(events) events over \(entities) items, work directory \(workspace.path)")
        let workload = SessionWorkload(events: events, entities: entities)
        let raw = try rawBaseline(workload, workspace: workspace)
        let free = try ingest(
            workload.batches(of: batch), after: workload.openers(claimed: false),
            into: workspace.freshDatabase("sessions-free.db"))
        let held = try ingest(
            workload.batches(of: batch), after: workload.openers(claimed: true),
            into: workspace.freshDatabase("sessions-held.db"))
        guard free.dropped == 0, held.dropped == events / 2 else {
            throw ProbeError.malformed(
                "dropped \(free.dropped) free and \(held.dropped) held, expected 0 and \(events / 2)")
        }
        let latency = try ClaimLatency(
            claims: claims, peerd: peerd, workspace: workspace
        )
        .run()

        let folding = MarkdownTable.rates(
            "folding", events: events, raw: raw,
            [
                ("raw SQLite insert (integer primary key only), batches of \(batch)", raw, []),
                ("ingest, every item free", free.seconds, []),
                ("ingest, every item held (\(Report.grouped(Double(held.dropped))) dropped)", held.seconds, []),
            ])
        var claims = MarkdownTable(["over HTTP on 127.0.0.1 (\(self.claims) each)", "p50 ms", "p99 ms"])
        for (name, summary) in [
            ("POST /items (an append, the baseline)", latency.append),
            ("claim, optimistic (no relay)", latency.optimistic),
            ("claim, granted through a relay", latency.granted),
        ] {
            claims.row(name, Figure.milli(summary.p50), Figure.milli(summary.p99))
        }
        Markdown.emit(
            Markdown.heading("sessions: \(Report.grouped(Double(events))) events over \(entities) items")
                + folding.lines
                + [""] + claims.lines)
    }

    /// Ingests `openers` untimed, then `batches` timed, into a new log;
    /// returns the time and how many events sessions dropped.
    private func ingest(_ batches: [[Event]], after openers: [Event], into path: String) throws -> (
        seconds: Double, dropped: Int
    ) {
        let log = try EventLog.create(at: path, replicaID: "bench")
        try log.ingest(openers)
        try log.writePendingProjections()
        var watch = Stopwatch()
        for batch in batches { try watch.measure { _ = try log.ingest(batch) } }
        try watch.measure { try log.writePendingProjections() }
        var dropped = 0
        for item in 0..<entities {
            dropped += try log.session(entityType: Item.entityType, entityID: SessionWorkload.itemID(item)).dropped
                .count
        }
        return (watch.seconds, dropped)
    }

    /// Raw SQLite inserting the same rows (payloads, random 16-byte ids) in the same batches.
    private func rawBaseline(_ workload: SessionWorkload, workspace: Workspace) throws -> Double {
        var random = SplitMix64(seed: 0x5345_5353)
        var entityRows: [String: Int64] = [:]
        let rows = workload.batches(of: batch).map { events in
            let arrivalMs = Int64(Date().timeIntervalSince1970 * 1000)
            return events.map { event in
                let entity = entityRows[event.entityID] ?? Int64(entityRows.count + 1)
                entityRows[event.entityID] = entity
                return RawRow(
                    feed: event.feed.replicaID == "a" ? 1 : 2, seq: Int64(event.seq), eventID: random.uuidBytes(),
                    timeMs: event.timeMs, entity: entity, entityID: event.entityID, payload: event.payload,
                    arrivalMs: arrivalMs)
            }
        }
        return try RawEventTable.insertSeconds(rows, workspace: workspace, name: "sessions-raw.db")
    }
}

/// The events of the folding phases: writers `a` and `b` take turns, each
/// event a quantity change of the next item round-robin, one millisecond
/// apart, after the openers: a `Created` or a `Claimed` by `a` of every item.
struct SessionWorkload {
    let events: Int
    let entities: Int
    private let startMs: Int64 = 1_700_000_000_000

    static func itemID(_ index: Int) -> String { "item-\(index)" }

    init(events: Int, entities: Int) {
        self.events = events
        self.entities = entities
    }

    func openers(claimed: Bool) -> [Event] {
        var random = SplitMix64(seed: 0x434C_4149)
        let payload =
            claimed ? SessionEvent.claimed(after: nil).payload : ItemEvent.created(name: "match", quantity: 0).payload
        return (0..<entities).map { item in
            Event(
                eventID: random.uuid(), feed: FeedID(replicaID: "a"), seq: UInt64(item + 1), timeMs: startMs,
                entityType: Item.entityType, entityID: Self.itemID(item), payload: payload)
        }
    }

    func batches(of size: Int) -> [[Event]] {
        var random = SplitMix64(seed: 0x4556_454E)
        var seqs = ["a": UInt64(entities), "b": UInt64(0)]
        var all: [Event] = []
        all.reserveCapacity(events)
        for index in 0..<events {
            let writer = index % 2 == 0 ? "a" : "b"
            seqs[writer]! += 1
            all.append(
                Event(
                    eventID: random.uuid(), feed: FeedID(replicaID: writer), seq: seqs[writer]!,
                    timeMs: startMs + 1 + Int64(index), entityType: Item.entityType,
                    entityID: Self.itemID((index / 2) % entities),
                    payload: ItemEvent.quantityChanged(quantity: Int64(index % 500)).payload))
        }
        return stride(from: 0, to: all.count, by: size).map { Array(all[$0..<min($0 + size, all.count)]) }
    }
}
