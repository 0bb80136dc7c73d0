import Foundation
import Replica

/// `peerd-bench thin`: a thin client against a real `peerd run` on
/// 127.0.0.1, over HTTP as the seed's phone client speaks it (docs/relay.md).
struct ThinBenchmark {
    var events = 50_000
    var batch = 500
    /// Stored thin-client events at which a window of pushes is timed.
    var windowStarts = [10_000, 200_000]
    /// Events pushed in each window.
    var window = 10_000
    var peerd: String
    var directory: String?
    /// `--store`: the daemon is a relay on this PostgreSQL store.
    var store: String?
    func run() throws {
        let workspace = try Workspace(directory: directory)
        defer { workspace.finish() }
        var growth = ThinPushGrowth(starts: windowStarts, window: window)
        let events = max(events, growth.eventsNeeded)
        let batches = ThinWorkload(events: events, batch: batch).batches
        progress("peerd-bench thin: \(events) events in batches of \(batch), work directory \(workspace.path)")

        let raw = try rawBaseline(batches, workspace: workspace, growth: &growth)
        let cluster = try LoopbackCluster(phase: "thin", peerd: peerd, workspace: workspace)
        defer { cluster.stopAll() }
        let relay = try cluster.start(
            "relay", data: try cluster.initialize("relay"), extra: store.map { ["--relay", "--store", $0] } ?? [])

        var push = Stopwatch()
        var stored = 0
        var windowStart: ChildStats?
        for (number, batch) in batches.enumerated() {
            let window = growth.windowIndex(stored: stored)
            if window != nil,
                number == 0 || window != growth.windowIndex(stored: stored - batches[number - 1].events.count)
            {
                windowStart = relay.daemon.sample()
            }
            let started = push.seconds
            let answer = try push.measure { try relay.api.send("POST", "/events", body: batch.body, seconds: 60) }
            guard answer.status == 200 else { throw ProbeError.malformed("POST /events: \(answer.statusLine)") }
            growth.add(push: push.seconds - started, events: batch.events.count, stored: stored)
            let next = stored + batch.events.count
            if window != nil, growth.windowIndex(stored: next) != window {
                growth.note(daemon: relay.daemon.sample(), stored: stored, before: windowStart)
            }
            stored = next
        }
        var pull = Stopwatch()
        var cursor: Int64?
        var pulled = 0
        while true {
            let path = "/events?limit=\(batch)" + (cursor.map { "&after=\($0)" } ?? "")
            let answer = try pull.measure { try relay.api.send("GET", path, seconds: 60) }
            guard answer.status == 200,
                let page = try JSONSerialization.jsonObject(with: Data(answer.body)) as? [String: Any],
                let served = page["events"] as? [Any]
            else { throw ProbeError.malformed("GET \(path): \(answer.statusLine)") }
            if served.isEmpty { break }
            pulled += served.count
            cursor = (page["next_offset"] as? NSNumber)?.int64Value
        }
        guard pulled == events else { throw ProbeError.malformed("pulled \(pulled) events, pushed \(events)") }

        let table = MarkdownTable.rates(
            "what", events: events, raw: raw,
            [
                ("raw SQLite insert (integer primary key only), batches of \(batch)", raw, []),
                ("push: POST /events", push.seconds, []),
                ("pull: GET /events?after=&limit=\(batch)", pull.seconds, []),
            ])
        Markdown.emit(
            Markdown.heading(
                "thin: \(Report.grouped(Double(events))) events, batches and pages of \(batch)",
                [
                    "`peerd run` on 127.0.0.1, a new connection per request (`Connection: close`)"
                        + (store == nil ? "" : "; a relay on a shared PostgreSQL store (`--store`)")
                ]) + table.lines
                + [
                    "",
                    "### Pushes as the thin-client index grows, windows of \(Report.grouped(Double(window))) events",
                    "",
                ]
                + growth.lines)
    }

    /// Raw SQLite inserting the same rows (payloads, random 16-byte ids) in
    /// the same batches: the seconds of the bare table, with every batch
    /// also timed into `growth`'s windows, for the bare table and for one
    /// with an index of the ids.
    private func rawBaseline(
        _ batches: [ThinWorkload.Batch], workspace: Workspace, growth: inout ThinPushGrowth
    ) throws -> Double {
        var random = SplitMix64(seed: 0x7448_494E)
        var seq: Int64 = 0
        let rows = batches.map { batch in
            let arrivalMs = Int64(Date().timeIntervalSince1970 * 1000)
            return batch.events.map { event in
                seq += 1
                return RawRow(
                    feed: 1, seq: seq, eventID: random.uuidBytes(), timeMs: event.timeMs, entity: Int64(event.item + 1),
                    entityID: event.entityID, payload: event.payload, arrivalMs: arrivalMs)
            }
        }
        var bare: Double = 0
        for shape in [RawEventTable.Shape.primaryKeyOnly, .randomIDIndex] {
            let path = workspace.freshDatabase("thin-raw-\(shape).db")
            defer { workspace.remove(path) }
            let table = try RawEventTable(path: path, shape: shape)
            var watch = Stopwatch()
            var stored = 0
            for batch in rows {
                let started = watch.seconds
                try watch.measure { try table.insert(batch) }
                growth.add(raw: watch.seconds - started, indexed: shape == .randomIDIndex, stored: stored)
                stored += batch.count
            }
            if shape == .primaryKeyOnly { bare = watch.seconds }
        }
        return bare
    }
}
