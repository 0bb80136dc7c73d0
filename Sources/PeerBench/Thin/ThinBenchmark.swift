import Foundation
import Replica

/// `peerd-bench thin`: a thin client against a real `peerd run` on
/// 127.0.0.1, over HTTP as the seed's phone client speaks it (docs/relay.md).
struct ThinBenchmark {
    var events = 50_000
    var batch = 500
    var peerd: String
    var directory: String?
    func run() throws {
        let workspace = try Workspace(directory: directory)
        defer { workspace.finish() }
        let batches = ThinWorkload(events: events, batch: batch).batches
        progress("peerd-bench thin: \(events) events in batches of \(batch), work directory \(workspace.path)")

        let raw = try rawBaseline(batches, workspace: workspace)
        let cluster = try LoopbackCluster(phase: "thin", peerd: peerd, workspace: workspace)
        defer { cluster.stopAll() }
        let relay = try cluster.start("relay", data: try cluster.initialize("relay"))

        var push = Stopwatch()
        for body in batches.map(\.body) {
            let answer = try push.measure { try relay.api.send("POST", "/events", body: body, seconds: 60) }
            guard answer.status == 200 else { throw ProbeError.malformed("POST /events: \(answer.statusLine)") }
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
                ["`peerd run` on 127.0.0.1, a new connection per request (`Connection: close`)"]) + table.lines)
    }

    /// Raw SQLite inserting the same rows (payloads, random 16-byte ids) in the same batches.
    private func rawBaseline(_ batches: [ThinWorkload.Batch], workspace: Workspace) throws -> Double {
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
        return try RawEventTable.insertSeconds(rows, workspace: workspace, name: "thin-raw.db")
    }
}
