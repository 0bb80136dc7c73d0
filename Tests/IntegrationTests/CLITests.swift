import Foundation
import Replica
import TestSupport
import Testing

/// `peerd` offline commands, run as real processes on real data directories.
@Suite("peerd offline commands")
struct CLITests {
    let temp: TemporaryDirectory
    init() throws { temp = try TemporaryDirectory() }

    /// Runs peerd on `dir` and requires success; returns stdout.
    @discardableResult
    func ok(_ arguments: [String], _ dir: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        let result = try Executables.peerd(arguments, data: temp.url(dir))
        #expect(result.status == 0, "peerd \(arguments) failed: \(result.stderr)", sourceLocation: sourceLocation)
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func hash(_ dir: String) throws -> String {
        let json = try ok(["status", "--json"], dir)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        return try #require(object["state_hash"] as? String)
    }

    @Test("init creates a replica and refuses to overwrite it")
    func initRefusesOverwrite() throws {
        let first = try ok(["init"], "a")
        #expect(first.hasPrefix("initialized replica "))
        let again = try Executables.peerd(["init"], data: temp.url("a"))
        #expect(again.status == 1)
        #expect(again.stderr.contains("refusing to overwrite"))
        #expect(try ok(["status"], "a").contains(first.split(separator: " ")[2]))
    }

    @Test("item commands fold into the listing, sorted by name, deleted ones hidden")
    func itemLifecycle() throws {
        try ok(["init"], "a")
        let bolts = try ok(["item", "create", "Bolts", "5"], "a")
        let anchors = try ok(["item", "create", "Anchors", "2"], "a")
        try ok(["item", "qty", bolts, "8"], "a")
        try ok(["item", "note", bolts, "aisle 4"], "a")
        try ok(["item", "rename", anchors, "Washers"], "a")
        let json = try ok(["items", "--json"], "a")
        let items = try JSONDecoder().decode([Item].self, from: Data(json.utf8))
        #expect(items.map(\.name) == ["Bolts", "Washers"])
        #expect(items[0].quantity == 8 && items[0].note == "aisle 4")
        try ok(["item", "note", bolts, "--clear"], "a")
        try ok(["item", "delete", anchors], "a")
        let visible = try JSONDecoder().decode([Item].self, from: Data(try ok(["items", "--json"], "a").utf8))
        #expect(visible.map(\.id) == [bolts])
        #expect(visible[0].note == nil)
        let all = try ok(["items", "--include-deleted"], "a")
        #expect(all.contains("deleted"))
        try ok(["item", "undo", anchors], "a")
        #expect(try ok(["items"], "a").contains("Washers"))
    }

    @Test("an idempotency key makes a repeated command append nothing")
    func idempotencyKey() throws {
        try ok(["init"], "a")
        let first = try ok(["item", "create", "Bolts", "5", "--json", "--idempotency-key", "k1"], "a")
        let second = try ok(["item", "create", "Bolts", "5", "--json", "--idempotency-key", "k1"], "a")
        #expect(first == second)
        #expect(try ok(["events", "--json"], "a").split(separator: "\n").count == 1)
    }

    @Test("export refuses a directory and the replica's own files, and replaces a file it may")
    func exportTargets() throws {
        try ok(["init"], "a")
        try ok(["item", "create", "Bolts", "5"], "a")
        let database = temp.path("a/replica.db")
        let databaseBefore = try Data(contentsOf: URL(fileURLWithPath: database))
        for (target, says) in [
            (temp.path("a"), "it is a directory"), (database, "it is a file of the replica"),
            (temp.path("a/cluster.key"), "it is a file of the replica"),
        ] {
            let refused = try Executables.peerd(["export", target], data: temp.url("a"))
            #expect(refused.status == 1, "export to \(target): \(refused.stderr)")
            #expect(refused.stderr.contains("refusing to export to \(target): \(says)"), "\(refused.stderr)")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: database)) == databaseBefore)
        #expect(try ok(["items"], "a").contains("Bolts"))
        // A file that cannot be created says why.
        let nowhere = temp.path("missing/out.ndjson")
        let failed = try Executables.peerd(["export", nowhere], data: temp.url("a"))
        #expect(failed.status == 1)
        #expect(failed.stderr.contains("cannot write \(nowhere): No such file or directory"), "\(failed.stderr)")
        // An existing regular file is replaced whole; no temporary file stays behind.
        let file = temp.path("old.ndjson")
        try "stale\n".write(toFile: file, atomically: true, encoding: .utf8)
        try ok(["export", file], "a")
        let lines = try String(contentsOfFile: file, encoding: .utf8).split(separator: "\n")
        // The event, then the certificate and the signed head (docs/events.md "Signed exports").
        #expect(lines.count == 3 && lines[0].contains("\"Bolts\"") && lines[2].hasPrefix(#"{"signed_head""#))
        #expect(!FileManager.default.fileExists(atPath: file + ".partial"))
    }

    @Test("import of a directory is refused with a clear error and stores nothing")
    func importRefusesDirectory() throws {
        try ok(["init"], "a")
        try FileManager.default.createDirectory(atPath: temp.path("d"), withIntermediateDirectories: true)
        let refused = try Executables.peerd(["import", temp.path("d")], data: temp.url("a"))
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("cannot import \(temp.path("d")): it is a directory"), "\(refused.stderr)")
        #expect(try ok(["events", "--json"], "a").isEmpty)
    }

    @Test("run, check and thin-client on a directory with no replica say to run init, and create nothing")
    func noReplicaHint() throws {
        for arguments in [["run", "--no-mdns", "--http", "off"], ["check"], ["thin-client", "list"]] {
            let result = try Executables.peerd(arguments, data: temp.url("none"))
            // For the daemon a missing replica is a configuration error (exit 78), which systemd does not restart.
            #expect(result.status == (arguments[0] == "run" ? 78 : 1), "\(arguments): \(result.stderr)")
            #expect(
                result.stderr.contains("no replica in \(temp.path("none")); run `peerd init --data"),
                "\(arguments): \(result.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: temp.path("none")))
    }

    @Test("an edit or undo of an item this replica does not know says so, with or without a daemon")
    func unknownItem() throws {
        try ok(["init"], "a")
        for arguments in [["item", "undo", "nosuch"], ["item", "qty", "nosuch", "3"]] {
            let result = try Executables.peerd(arguments, data: temp.url("a"))
            #expect(result.status == 1 && result.stderr.contains("no item nosuch"), "\(arguments): \(result.stderr)")
        }
    }

    @Test("--help after a command group lists its commands; the bare group is a usage error")
    func groupHelp() throws {
        let help = try Executables.peerd(["item", "--help"], data: temp.url("a"))
        #expect(help.status == 0, "\(help.stderr)")
        #expect(help.stdout.contains("item create NAME QTY") && help.stdout.contains("item undo ID"), "\(help.stdout)")
        let bare = try Executables.peerd(["thin-client"], data: temp.url("a"))
        #expect(bare.status == 2)
        #expect(bare.stderr.contains("\"thin-client\" needs a command") && bare.stderr.contains("thin-client add"))
    }

    @Test("export and import move events both ways and the replicas converge, deletion winning")
    func exportImportConverges() throws {
        try ok(["init"], "a")
        try ok(["init"], "b")
        let id = try ok(["item", "create", "Bolts", "5"], "a")
        try ok(["export", temp.url("a1.ndjson").path], "a")
        #expect(try ok(["import", temp.url("a1.ndjson").path], "b").contains("imported 1 new events"))
        // Concurrent edits: a rename on b, a delete on a.
        try ok(["item", "rename", id, "Screws"], "b")
        try ok(["item", "delete", id], "a")
        try ok(["export", temp.url("a2.ndjson").path], "a")
        try ok(["export", temp.url("b2.ndjson").path], "b")
        try ok(["import", temp.url("b2.ndjson").path], "a")
        try ok(["import", temp.url("a2.ndjson").path], "b")
        // Importing again changes nothing.
        #expect(try ok(["import", temp.url("a2.ndjson").path], "b").contains("imported 0 new events"))
        #expect(try hash("a") == hash("b"))
        #expect(try ok(["items", "--json"], "a") == "[]")
        #expect(try ok(["items", "--json"], "b") == "[]")
        // Three events, then a's and b's certificates and the two feeds' signed heads (docs/events.md).
        let exported = try ok(["export"], "a").split(separator: "\n")
        #expect(exported.filter { $0.hasPrefix(#"{"replica_event_id""#) }.count == 3)
        #expect(exported.filter { $0.hasPrefix(#"{"signed_head""#) }.count == 2, "\(exported)")
    }

    @Test("a bad NDJSON line is reported with its number and nothing is imported")
    func importBadLine() throws {
        try ok(["init"], "a")
        try ok(["init"], "b")
        try ok(["item", "create", "Bolts", "5"], "a")
        try ok(["item", "create", "Nuts", "3"], "a")
        let file = temp.url("bad.ndjson")
        var lines = try ok(["export"], "a").split(separator: "\n").map(String.init)
        lines.insert(#"{"replica_event_id":"not-a-uuid"}"#, at: 1)
        try (lines.joined(separator: "\n") + "\n").write(to: file, atomically: true, encoding: .utf8)
        let result = try Executables.peerd(["import", file.path], data: temp.url("b"))
        #expect(result.status == 1)
        #expect(result.stderr.contains("bad.ndjson:2:"))
        #expect(result.stderr.contains("nothing was imported"))
        #expect(try ok(["events", "--json"], "b").isEmpty)
    }

    /// `count` item events of two feeds of `replicaID` (two scopes) as export
    /// lines, each item created then renamed. The importing replica's own
    /// events: it signs them as it stores them (another replica's come with
    /// their signed heads, docs/events.md "Signed exports").
    private func exportLines(_ count: Int, of replicaID: String) -> [String] {
        (1...count).map { index in
            let feed = FeedID(replicaID: replicaID, scope: index % 2 == 0 ? "even" : "odd")
            let seq = UInt64((index + 1) / 2)
            let item = (index - 1) / 4
            let payload =
                seq % 2 == 1
                ? #"{"name":"# + EventJSON.quoted("Bolt \"\(item)\" ✓") + #","quantity":\#(index),"type":"Created"}"#
                : #"{"name":"Nut \#(item)","type":"Renamed"}"#
            let event = Event(
                eventID: UUID(), feed: feed, seq: seq, timeMs: 1_700_000_000_000 + Int64(index), entityType: "item",
                entityID: "i\(feed.scope)-\(item)", payload: payload)
            return EventJSON.line(for: event, offset: Int64(index), arrivalTimeMs: 1_700_000_000_000)
        }
    }

    @Test("an import of several batches stores every event once, with CRLF and blank lines, and again stores none")
    func importManyBatches() throws {
        try ok(["init"], "b")
        let lines = exportLines(25_001, of: try ReplicaStatus.of(temp.url("b")).replica_id)
        let file = temp.url("many.ndjson")
        try (lines.joined(separator: "\r\n") + "\r\n\n  \n").write(to: file, atomically: true, encoding: .utf8)
        #expect(
            try ok(["import", file.path], "b")
                == "imported 25001 new events, 0 already held, from 25001 lines of \(file.path)")
        #expect(try ok(["import", file.path], "b").hasPrefix("imported 0 new events, 25001 already held"))
        let items = try JSONDecoder().decode([Item].self, from: Data(try ok(["items", "--json"], "b").utf8))
        #expect(items.count == 12_501)
        #expect(items.allSatisfy { $0.name.hasPrefix("Nut ") || $0.name.hasPrefix("Bolt \"") })
    }

    @Test("a bad line after the first batches still stops the import before anything is stored")
    func importBadLineLate() throws {
        try ok(["init"], "b")
        var lines = exportLines(25_000, of: try ReplicaStatus.of(temp.url("b")).replica_id)
        lines.insert(lines[24_000].replacingOccurrences(of: #""replica_write_offset":"#, with: #""seq":"#), at: 24_000)
        let file = temp.url("late.ndjson")
        try (lines.joined(separator: "\n") + "\n").write(to: file, atomically: true, encoding: .utf8)
        let result = try Executables.peerd(["import", file.path], data: temp.url("b"))
        #expect(result.status == 1)
        #expect(
            result.stderr.contains("late.ndjson:24001: missing field \"replica_write_offset\"; nothing was imported"))
        #expect(try ok(["events", "--json"], "b").isEmpty)
        // A bad line early and one late: the first in the file is the one named.
        lines.insert("{}", at: 2)
        try (lines.joined(separator: "\n") + "\n").write(to: file, atomically: true, encoding: .utf8)
        let both = try Executables.peerd(["import", file.path], data: temp.url("b"))
        #expect(both.status == 1)
        #expect(both.stderr.contains("late.ndjson:3: missing field"))
        #expect(!both.stderr.contains("24002"))
        #expect(try ok(["events", "--json"], "b").isEmpty)
    }

    @Test("an unknown event type in an import is stored, replicated and counted as poison")
    func importUnknownEventType() throws {
        try ok(["init"], "a")
        let origin = try ReplicaStatus.of(temp.url("a")).replica_id
        let line =
            #"{"replica_event_id":"6f1c9b8e-2d3a-4c5b-9e7f-0a1b2c3d4e5f","replica_id":"\#(origin)","scope":"default","#
            + #""replica_write_offset":1,"replica_time_ms":5,"entity_type":"item","entity_id":"i1","#
            + #""payload":{"type":"Teleported"},"server_offset":null,"server_time_ms":null}"#
        let file = temp.url("poison.ndjson")
        try (line + "\n").write(to: file, atomically: true, encoding: .utf8)
        try ok(["import", file.path], "a")
        let status = try ok(["status", "--json"], "a")
        #expect(status.contains(#""poison_events":1"#))
        #expect(try ok(["export"], "a").contains("Teleported"))
    }

    @Test("bad flags, arguments and commands exit 2 with one clear line")
    func usageErrors() throws {
        try ok(["init"], "a")
        for arguments in [
            ["item", "qty", "x", "lots"], ["items", "--colour"], ["frobnicate"], ["item", "create", "A"],
            ["lab", "--nodes", "3"], ["run", "--clock-offset-ms", "an hour"],
        ] {
            let result = try Executables.peerd(arguments, data: temp.url("a"))
            #expect(result.status == (arguments[0] == "run" ? 78 : 2), "\(arguments)")
            #expect(result.stderr.hasPrefix("peerd: "), "\(arguments)")
        }
        let help = try Executables.peerd(["item", "create", "--help"], data: temp.url("a"))
        #expect(help.status == 0 && help.stdout.contains("usage: peerd item create"))
    }

    @Test("a damaged or foreign database file is refused with a clear error and left as it was")
    func refusesBadDatabase() throws {
        try FileManager.default.createDirectory(at: temp.url("junk"), withIntermediateDirectories: true)
        let db = temp.url("junk/replica.db")
        let junk = Data((0..<8192).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        try junk.write(to: db)
        let result = try Executables.peerd(["status"], data: temp.url("junk"))
        #expect(result.status == 1)
        #expect(result.stderr.contains("damaged or not a database"))
        #expect(try Data(contentsOf: db) == junk)

        try FileManager.default.createDirectory(at: temp.url("foreign"), withIntermediateDirectories: true)
        let foreign = temp.url("foreign/replica.db")
        let made = try Executables.runSystem(
            "sqlite3", [foreign.path, "CREATE TABLE notes(x); INSERT INTO notes VALUES (1);"])
        #expect(made.status == 0)
        let before = try Data(contentsOf: foreign)
        let refused = try Executables.peerd(["items"], data: temp.url("foreign"))
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("not a PeerSync database"))
        #expect(try Data(contentsOf: foreign) == before)
    }

    @Test("commands on a directory without a replica say to run init")
    func missingReplica() throws {
        let result = try Executables.peerd(["items"], data: temp.url("none"))
        #expect(result.status == 1)
        #expect(result.stderr.contains("peerd init"))
    }
}
