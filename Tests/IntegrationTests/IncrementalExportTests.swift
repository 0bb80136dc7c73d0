import Foundation
import TestSupport
import Testing

@testable import Replica

/// `peerd export --since` (docs/cli.md "Incremental exports"): only what
/// another replica lacks, verified on import as a full export is.
@Suite("incremental exports")
struct IncrementalExportTests {
    let temp: TemporaryDirectory
    init() throws { temp = try TemporaryDirectory() }

    func status(_ dir: String) throws -> ReplicaStatus { try ReplicaStatus.of(temp.url(dir)) }

    func lines(_ path: String) throws -> [String] {
        try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map(String.init)
    }

    /// a writes, b takes all of it, then both write more: a's item edits and a third replica's feed that
    /// reached a by file, b's own edits.
    func twoReplicasApart() throws -> (full: String, item: String) {
        try temp.cluster("a", ["b", "c", "o"])
        let item = try temp.peerdOK(["item", "create", "Bolts", "5"], "a")
        for quantity in 6...9 { try temp.peerdOK(["item", "qty", item, "\(quantity)"], "a") }
        let first = temp.path("a-first.ndjson")
        try temp.peerdOK(["export", first], "a")
        try temp.peerdOK(["import", first], "b")
        try temp.peerdOK(["item", "rename", item, "Screws"], "a")
        try temp.peerdOK(["item", "create", "Nuts", "3"], "a")
        try temp.peerdOK(["item", "create", "from o", "1"], "o")
        let fromO = temp.path("o.ndjson")
        try temp.peerdOK(["export", fromO], "o")
        try temp.peerdOK(["import", fromO], "a")
        try temp.peerdOK(["item", "note", item, "aisle 4"], "b")
        let full = temp.path("a-full.ndjson")
        try temp.peerdOK(["export", full], "a")
        return (full, item)
    }

    @Test("an export since another replica's peerd status (text or --json) replays there to a full export's state")
    func sinceAStatusReplaysToTheFullState() throws {
        let (full, _) = try twoReplicasApart()
        for (name, arguments) in [("text", ["status"]), ("json", ["status", "--json"])] {
            let cursorFile = temp.path("b-status.\(name)")
            try temp.peerdOK(arguments, "b").write(toFile: cursorFile, atomically: true, encoding: .utf8)
            let delta = temp.path("a-delta-\(name).ndjson")
            try temp.peerdOK(["export", delta, "--since", cursorFile], "a")
            let deltaLines = try lines(delta)
            // a's feed continues after the 5 events b holds; O's feed comes whole; b's own feed not at all.
            #expect(deltaLines.filter { $0.hasPrefix(#"{"replica_event_id""#) }.count == 3, "\(deltaLines)")
            // a's own feed continues after its seq 5, which a signs as its origin.
            let bases = deltaLines.filter { $0.hasPrefix(#"{"base":"#) }
            #expect(bases.count == 1 && bases[0].contains(#""seq":5,"signature":""#), "\(deltaLines)")
            #expect(deltaLines.count < (try lines(full)).count)
        }
        let bBefore = try status("b")
        let imported = try temp.peerdOK(["import", temp.path("a-delta-json.ndjson")], "b")
        #expect(imported.contains("imported 3 new events"), "\(imported)")
        // The same file again: idempotent. The text status's export holds the same events.
        #expect(try temp.peerdOK(["import", temp.path("a-delta-json.ndjson")], "b").contains("imported 0 new events"))
        #expect(try temp.peerdOK(["import", temp.path("a-delta-text.ndjson")], "b").contains("imported 0 new events"))
        // c takes the full export and b's own feed: the same state as b after the delta.
        try temp.peerdOK(["import", full], "c")
        let bOwn = temp.path("b-own.ndjson")
        try temp.peerdOK(["export", bOwn, "--since", full], "b")
        #expect(try lines(bOwn).filter { $0.hasPrefix(#"{"replica_event_id""#) }.count == 1)
        try temp.peerdOK(["import", bOwn], "c")
        let (b, c) = (try status("b"), try status("c"))
        #expect(b.event_count == bBefore.event_count + 3)
        #expect(b.state_hash == c.state_hash && b.heads == c.heads, "\(b) \(c)")
    }

    @Test("the weekly stick: an export since the previous export carries only the week's events")
    func sinceThePreviousExport() throws {
        let (full, item) = try twoReplicasApart()
        try temp.peerdOK(["import", full], "c")
        try temp.peerdOK(["item", "qty", item, "42"], "a")
        try temp.peerdOK(["item", "create", "Washers", "100"], "a")
        let week = temp.path("a-week.ndjson")
        try temp.peerdOK(["export", week, "--since", full], "a")
        #expect(try lines(week).filter { $0.hasPrefix(#"{"replica_event_id""#) }.count == 2)
        #expect(try temp.peerdOK(["import", week], "c").contains("imported 2 new events"))
        let (a, c) = (try status("a"), try status("c"))
        #expect(a.state_hash == c.state_hash && a.heads == c.heads, "\(a) \(c)")
    }

    @Test("an incremental export whose base the receiver lacks is refused, naming the export it needs; nothing stored")
    func aMissingBaseIsRefused() throws {
        let (full, _) = try twoReplicasApart()
        let cursorFile = temp.path("b-status.json")
        try temp.peerdOK(["status", "--json"], "b").write(toFile: cursorFile, atomically: true, encoding: .utf8)
        let delta = temp.path("a-delta.ndjson")
        try temp.peerdOK(["export", delta, "--since", cursorFile], "a")
        let aID = try status("a").replica_id
        let refused = try Executables.peerd(["import", delta], data: temp.url("c"))
        #expect(refused.status == 1)
        #expect(
            refused.stderr.contains(
                "this file is an incremental export: it continues feed \(aID)/default after seq 5, and this replica "
                    + "holds that feed only to seq 0"), "\(refused.stderr)")
        #expect(refused.stderr.contains("Import first the export this one follows"), "\(refused.stderr)")
        #expect(
            refused.stderr.contains("peerd export --since STATUS_FILE")
                && refused.stderr.hasSuffix("nothing was imported\n"))
        #expect(try status("c").event_count == 0)
        // With the export it follows first, the same file imports.
        try temp.peerdOK(["import", temp.path("a-first.ndjson")], "c")
        #expect(try temp.peerdOK(["import", delta], "c").contains("imported 3 new events"))
        _ = full
    }

    @Test("an export since a cursor of another history of a feed is refused: the chain link at the base differs")
    func aBaseOfAnotherHistoryIsRefused() throws {
        try temp.cluster("a", ["b"])
        let item = try temp.peerdOK(["item", "create", "Bolts", "5"], "a")
        // A copy of a restored later writes another seq 2 and 3 of a's feed; b takes that history.
        try FileManager.default.copyItem(at: temp.url("a"), to: temp.url("a-restored"))
        for quantity in [6, 7] { try temp.peerdOK(["item", "qty", item, "\(quantity)"], "a") }
        for quantity in [60, 70] { try temp.peerdOK(["item", "qty", item, "\(quantity)"], "a-restored") }
        let restored = temp.path("restored.ndjson")
        try temp.peerdOK(["export", restored], "a-restored")
        try temp.peerdOK(["import", restored], "b")
        try temp.peerdOK(["item", "qty", item, "8"], "a")
        let cursorFile = temp.path("b-status.json")
        try temp.peerdOK(["status", "--json"], "b").write(toFile: cursorFile, atomically: true, encoding: .utf8)
        let delta = temp.path("a-delta.ndjson")
        try temp.peerdOK(["export", delta, "--since", cursorFile], "a")
        let before = try status("b")
        let refused = try Executables.peerd(["import", delta], data: temp.url("b"))
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("holds another history of it at seq 3"), "\(refused.stderr)")
        #expect(refused.stderr.contains("exported from a fork of the feed"), "\(refused.stderr)")
        #expect(try status("b") == before)
    }

    @Test("--since refuses a file that is neither a status nor an export, and a missing one, writing nothing")
    func aBadSinceFileIsRefused() throws {
        try temp.peerdOK(["init"], "a")
        let junk = temp.path("junk.txt")
        try "hello\nworld\n".write(toFile: junk, atomically: true, encoding: .utf8)
        let out = temp.path("out.ndjson")
        let bad = try Executables.peerd(["export", out, "--since", junk], data: temp.url("a"))
        #expect(bad.status == 1 && bad.stderr.contains("--since: \(junk): line 1 is neither an event nor a proof line"))
        let missing = try Executables.peerd(["export", out, "--since", temp.path("nope")], data: temp.url("a"))
        #expect(missing.status == 1 && missing.stderr.contains("--since: \(temp.path("nope")): cannot read it"))
        #expect(!FileManager.default.fileExists(atPath: out))
    }
}
