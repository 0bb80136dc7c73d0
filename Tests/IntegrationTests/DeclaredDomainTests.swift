import DaemonClient
import Foundation
import Replica
import SyncProtocol
import TestSupport
import Testing

/// Declared domains with real daemons (docs/domains.md, docs/http-api.md
/// "Declared entities"): declared over HTTP, validated where events enter,
/// synced, versions reported, and scopes applied per type.
@Suite("peerd run: declared domains")
struct DeclaredDomainTests {
    let temp: TemporaryDirectory
    init() throws { temp = try TemporaryDirectory() }

    /// `inspection` at `version`: from version 2, `FindingRecorded` adds its `count`.
    static func inspection(version: Int = 1, scope: String = "inspections") -> String {
        let adds = version >= 2 ? #"{"add":"findings","from":"count"}"# : #"{"add":"findings","value":1}"#
        let count = version >= 2 ? #""fields":{"count":{"type":"integer"}},"# : ""
        return """
            {"entity_type":"inspection","version":\(version),"scope":"\(scope)",
             "fields":{"site":{"type":"string"},"status":{"type":"string","default":"open"},
                       "findings":{"type":"integer"},"checklist":{"type":"set","of":"string"}},
             "events":{
              "Opened":{"fields":{"site":{"type":"string"}},"effects":[{"set":"site","from":"site"}]},
              "Ticked":{"fields":{"item":{"type":"string"}},"effects":[{"insert":"checklist","from":"item"}]},
              "FindingRecorded":{\(count)"effects":[\(adds)]}}}
            """
    }

    func json(_ daemon: Daemon, _ path: String) throws -> [String: Any] {
        try jsonObject(try daemon.api!.request("GET", path).text)
    }

    func post(_ daemon: Daemon, _ path: String, _ body: String, key: String? = nil) throws -> (Int, [String: Any]) {
        let reply = try daemon.api!.request(
            "POST", path, body: body, headers: key.map { [("Idempotency-Key", $0)] } ?? [])
        return (reply.status, try jsonObject(reply.text))
    }

    func domains(_ daemon: Daemon) throws -> [String: Int] {
        (try json(daemon, "/status")["domains"] as? [String: Int]) ?? [:]
    }

    @Test("events that do not fit the declaration get a 422 naming the field, and nothing of them is stored")
    func validation() throws {
        try temp.cluster("a", [])
        let a = try Daemon.start(data: temp.url("a"))
        let (declared, answer) = try post(a, "/domains", Self.inspection())
        #expect(declared == 201, "\(answer)")
        #expect(answer["version"] as? Int == 1)
        let halfSigned = try post(a, "/domains", #"{"declaration":\#(Self.inspection(version: 2)),"admin_key":"00"}"#)
        #expect(halfSigned.0 == 422, "\(halfSigned.1)")
        #expect((halfSigned.1["error"] as? [String: Any])?["path"] as? String == "signature")
        #expect(try post(a, "/entities/inspection/i1/events", #"{"type":"Opened","site":"North"}"#).0 == 201)
        let count = try json(a, "/status")["event_count"] as? Int
        let refusals: [(String, String?, String)] = [
            (#"{"type":"Opened","site":5}"#, "site", "must be string"),
            (#"{"type":"Opened"}"#, "site", "is missing"),
            (#"{"type":"Ticked","item":"fence","colour":"red"}"#, "colour", "is not declared"),
            (#"{"type":"Exploded"}"#, nil, #"has no event "Exploded""#),
        ]
        for (payload, field, words) in refusals {
            let (status, body) = try post(a, "/entities/inspection/i1/events", payload)
            let error = body["error"] as? [String: Any]
            #expect(status == 422, "\(payload)")
            #expect(error?["code"] as? String == "invalid_event")
            #expect(error?["field"] as? String == field, "\(payload): \(body)")
            #expect((error?["message"] as? String)?.contains(words) == true, "\(payload): \(body)")
        }
        // A thin client's batch with one bad event stores none of it.
        let batch = """
            [{"replica_event_id":"\(UUID().uuidString.lowercased())","replica_id":"tablet","entity_type":"inspection",
              "entity_id":"i2","scope":"inspections","replica_time_ms":1,"payload":{"type":"Opened","site":"South"}},
             {"replica_event_id":"\(UUID().uuidString.lowercased())","replica_id":"tablet","entity_type":"inspection",
              "entity_id":"i2","scope":"inspections","replica_time_ms":2,"payload":{"type":"Ticked"}}]
            """
        let pushed = try a.api!.request("POST", "/events", body: batch)
        #expect(pushed.status == 422, "\(pushed.text)")
        #expect(((try jsonObject(pushed.text)["error"] as? [String: Any])?["field"] as? String) == "item")
        #expect(try json(a, "/status")["event_count"] as? Int == count)
        // A type no declaration folds, an unknown filter field, a wrong scope.
        #expect(try a.api!.request("GET", "/entities/meter").status == 404)
        #expect(try a.api!.request("GET", "/entities/inspection?colour=red").status == 400)
        let (wrongScope, scopeBody) = try post(
            a, "/entities/inspection/i1/events?scope=default", #"{"type":"Ticked","item":"gate"}"#)
        #expect(wrongScope == 422)
        #expect((scopeBody["error"] as? [String: Any])?["code"] as? String == "wrong_scope")
        #expect(try json(a, "/status")["event_count"] as? Int == count)
        // A thin client's event of a declared type goes in the declared scope too.
        let outside = """
            [{"replica_event_id":"\(UUID().uuidString.lowercased())","replica_id":"tablet","entity_type":"inspection",
              "entity_id":"i2","scope":"default","replica_time_ms":1,"payload":{"type":"Opened","site":"South"}}]
            """
        let misplaced = try a.api!.request("POST", "/events", body: outside)
        #expect(misplaced.status == 422, "\(misplaced.text)")
        #expect(misplaced.text.contains("wrong_scope"))
        // Items keep their own rules: /entities does not write them.
        let (builtIn, builtInBody) = try post(
            a, "/entities/item/x/events", #"{"type":"QuantityChanged","quantity":-3}"#)
        #expect(builtIn == 409, "\(builtInBody)")
        #expect(try json(a, "/status")["event_count"] as? Int == count)
    }

    @Test("two writes with their own Idempotency-Keys are two events, even within the double-tap window")
    func keysOverrideTheDoubleTapGuard() throws {
        try temp.cluster("a", [])
        let a = try Daemon.start(data: temp.url("a"), extra: ["--double-tap-ms", "60000"])
        #expect(try post(a, "/domains", Self.inspection()).0 == 201)
        let path = "/entities/inspection/i1/events"
        let finding = #"{"type":"FindingRecorded"}"#
        let first = try post(a, path, finding, key: "k1").1["replica_event_id"] as? String
        let second = try post(a, path, finding, key: "k2").1["replica_event_id"] as? String
        let retry = try post(a, path, finding, key: "k1").1["replica_event_id"] as? String
        #expect(first != second)
        #expect(retry == first)
        // Without keys, the second identical tap within the window is the first.
        let tap = try post(a, path, finding).1["replica_event_id"] as? String
        let doubleTap = try post(a, path, finding).1["replica_event_id"] as? String
        #expect(tap == doubleTap)
        #expect(try jsonObject(try a.api!.request("GET", "/entities/inspection/i1").text)["findings"] as? Int == 3)
    }

    @Test("two daemons report different declaration versions, and converge once both hold the same declarations")
    func versionsReportedAndConverge() throws {
        try temp.cluster("a", ["b"])
        // While apart: a declares version 1 and writes; b has no declaration.
        let a = try Daemon.start(data: temp.url("a"))
        #expect(try post(a, "/domains", Self.inspection()).0 == 201)
        for payload in [
            #"{"type":"Opened","site":"North"}"#, #"{"type":"FindingRecorded"}"#, #"{"type":"Ticked","item":"fence"}"#,
        ] {
            #expect(try post(a, "/entities/inspection/i1/events", payload, key: payload).0 == 201)
        }
        // A retry with the same key stores nothing new.
        #expect(
            try post(
                a, "/entities/inspection/i1/events", #"{"type":"FindingRecorded"}"#, key: #"{"type":"FindingRecorded"}"#
            ).0 == 201)
        let b = try Daemon.start(data: temp.url("b"), peers: [a.address])
        try Convergence.wait([temp.url("a"), temp.url("b")])
        #expect(try domains(b) == ["inspection": 1])
        let onA = try a.api!.request("GET", "/entities/inspection/i1").text
        #expect(try b.api!.request("GET", "/entities/inspection/i1").text == onA)
        #expect(try jsonObject(onA)["findings"] as? Int == 1)

        // b declares version 2, which refolds i1 differently: refused, then accepted.
        let (refused, refusal) = try post(b, "/domains", Self.inspection(version: 2))
        #expect(refused == 409)
        #expect((refusal["error"] as? [String: Any])?["code"] as? String == "refold_needed")
        #expect(try post(b, "/domains?accept_refold=true", Self.inspection(version: 2)).0 == 201)
        #expect(try post(b, "/entities/inspection/i1/events", #"{"type":"FindingRecorded","count":4}"#).0 == 201)
        try Convergence.wait([temp.url("a"), temp.url("b")])
        #expect(try domains(a) == ["inspection": 2])
        // Each side's row of the other shows the other's versions, and neither differs any more.
        let held = try Poll.until(timeout: .seconds(30), every: .milliseconds(20)) {
            let peers = try json(a, "/peers")["peers"] as? [[String: Any]] ?? []
            let status = try json(a, "/status")
            return peers.contains { ($0["domains"] as? [String: Int]) == ["inspection": 2] }
                && (status["domains_differ"] as? [Any])?.isEmpty == true
        }
        let peersOfA = try json(a, "/peers")
        #expect(held, "a's /peers: \(peersOfA)")
        let state = try jsonObject(try a.api!.request("GET", "/entities/inspection/i1").text)
        // Under version 2 a FindingRecorded without its count is poison; the later one adds 4.
        #expect(state["findings"] as? Int == 4, "\(state)")
        let onB = try b.api!.request("GET", "/entities/inspection/i1").text
        #expect(try jsonObject(onB)["findings"] as? Int == 4, "\(onB)")
    }

    @Test("with an admin key, only its declarations count, and a type's events reach only who may read its scope")
    func scopesPerType() throws {
        try temp.peerdOK(["admin-key", "--out", temp.path("admin.key")], "a")
        try temp.cluster("a", ["b"])
        for (dir, read, write) in [("a", "*", "*"), ("b", "default", "default")] {
            let identity = try temp.peerdOK(["identity"], dir)
            let invite = try temp.peerdOK(
                ["invite", "--admin-key", temp.path("admin.key"), "--for", identity, "--read", read, "--write", write],
                "a")
            try temp.peerdOK(["init", "--join", invite], dir)
        }
        try Self.inspection().write(toFile: temp.path("inspection.json"), atomically: true, encoding: .utf8)
        let a = try Daemon.start(data: temp.url("a"))
        let unsigned = try post(a, "/domains", Self.inspection())
        #expect(unsigned.0 == 403, "\(unsigned.1)")
        try temp.peerdOK(
            ["domain", "declare", temp.path("inspection.json"), "--admin-key", temp.path("admin.key")], "a")
        #expect(try post(a, "/entities/inspection/i1/events", #"{"type":"Opened","site":"North"}"#).0 == 201)
        #expect(try post(a, "/items", #"{"name":"Shared","quantity":1}"#).0 == 201)
        let b = try Daemon.start(data: temp.url("b"), peers: [a.address])
        // b holds the declaration (every certificate reads peersync/domains) and the item, not the inspection.
        let arrived = try Poll.until(timeout: .seconds(30), every: .milliseconds(20)) {
            try domains(b) == ["inspection": 1] && ((try json(b, "/items")["items"] as? [Any])?.count == 1)
        }
        let statusOfB = try json(b, "/status")
        #expect(arrived, "b's status: \(statusOfB)")
        #expect((try json(b, "/entities/inspection")["entities"] as? [Any])?.isEmpty == true)
        // a hides a feed from b, so it sends b no state; b still sees that a folds what it folds.
        let agreed = try Poll.until(timeout: .seconds(30), every: .milliseconds(20)) {
            let status = try json(b, "/status")
            let peers = try json(b, "/peers")["peers"] as? [[String: Any]] ?? []
            return (status["domains_differ"] as? [Any])?.isEmpty == true
                && peers.contains { ($0["domains"] as? [String: Int]) == ["inspection": 1] }
        }
        let peersOfB = try json(b, "/peers")
        #expect(agreed, "b's /peers: \(peersOfB)")
        // And b may not write the type's scope.
        let (status, body) = try post(b, "/entities/inspection/i2/events", #"{"type":"Opened","site":"South"}"#)
        #expect(status == 403, "\(body)")
        #expect((body["error"] as? [String: Any])?["code"] as? String == "scope_not_writable")
    }

    @Test("the change stream filtered by type carries declared states; a thin client pulls declared types when it asks")
    func changeStreamAndThinClientPull() throws {
        try temp.cluster("a", [])
        let a = try Daemon.start(data: temp.url("a"))
        #expect(try post(a, "/domains", Self.inspection()).0 == 201)
        #expect(try post(a, "/items", #"{"name":"Bolts","quantity":3}"#).0 == 201)
        #expect(try post(a, "/entities/inspection/i1/events", #"{"type":"Opened","site":"North"}"#).0 == 201)
        #expect(try post(a, "/entities/inspection/i1/undo", "").0 == 201)
        let stream = try a.api!.events("/changes?after=0&types=inspection")
        defer { stream.close() }
        var seen: [[String: Any]] = []
        while seen.count < 2, let message = try stream.next() {
            guard message.event == "event" else { continue }
            seen.append(try jsonObject(message.data))
        }
        let types = seen.compactMap { ($0["event"] as? [String: Any])?["entity_type"] as? String }
        #expect(types == ["inspection", "inspection"], "only the type asked for, not the item or the declaration")
        let first = try #require(seen.first?["projection"] as? [String: Any])
        // The projection is the state when the event is sent: after the undo, the site is back to its default.
        #expect(first["id"] as? String == "i1")
        #expect(first["site"] as? String == "")
        // The seed's pull serves items only; with ?types= the declared type too, its undo as stored.
        let items = try jsonObject(try a.api!.request("GET", "/events?after=0").text)["events"] as? [[String: Any]]
        #expect(items?.map { $0["entity_type"] as? String } == ["item"])
        let both = try jsonObject(try a.api!.request("GET", "/events?after=0&types=item,inspection").text)
        let pulled = (both["events"] as? [[String: Any]] ?? []).map { $0["entity_type"] as? String }
        #expect(pulled == ["item", "inspection", "inspection"])
        let history = try json(a, "/entities/inspection/i1/history")["events"] as? [[String: Any]] ?? []
        #expect(history.map { $0["undone"] as? Bool } == [true, false])
    }

    @Test("peerd domain and peerd entity work on the files without a daemon, as over HTTP")
    func commandsWithoutADaemon() throws {
        try temp.cluster("a", [])
        try Self.inspection().write(toFile: temp.path("inspection.json"), atomically: true, encoding: .utf8)
        #expect(
            try temp.peerdOK(["domain", "declare", temp.path("inspection.json")], "a")
                == "declared inspection version 1")
        let again = try Executables.peerd(["domain", "declare", temp.path("inspection.json")], data: temp.url("a"))
        #expect(again.status == 1)
        #expect(again.stderr.contains("needs a higher version"), "\(again.stderr)")
        #expect(try temp.peerdOK(["domain", "list"], "a").hasPrefix("inspection  version 1"))
        let id = try temp.peerdOK(["entity", "create", "inspection", #"{"type":"Opened","site":"North"}"#], "a")
        try temp.peerdOK(["entity", "append", "inspection", id, #"{"type":"Ticked","item":"fence"}"#], "a")
        let bad = try Executables.peerd(
            ["entity", "append", "inspection", id, #"{"type":"Ticked","item":7}"#], data: temp.url("a"))
        #expect(bad.status == 1)
        #expect(bad.stderr.contains(#"field "item" of inspection Ticked"#), "\(bad.stderr)")
        let state = try jsonObject(try temp.peerdOK(["entity", "get", "inspection", id], "a"))
        #expect(state["checklist"] as? [String] == ["fence"])
        let list = try jsonObject(
            try temp.peerdOK(["entity", "list", "inspection", "--where", "checklist=fence"], "a"))
        #expect((list["entities"] as? [[String: Any]])?.map { $0["id"] as? String } == [id])
        let none = try jsonObject(try temp.peerdOK(["entity", "list", "inspection", "--where", "site=South"], "a"))
        #expect((none["entities"] as? [Any])?.isEmpty == true)
        // Pages: two of three, then the rest after the page's last id.
        var ids = [id]
        for site in ["East", "West"] {
            ids.append(
                try temp.peerdOK(["entity", "create", "inspection", #"{"type":"Opened","site":"\#(site)"}"#], "a"))
        }
        ids.sort()
        let first = try jsonObject(try temp.peerdOK(["entity", "list", "inspection", "--limit", "2"], "a"))
        #expect((first["entities"] as? [[String: Any]])?.map { $0["id"] as? String } == Array(ids.prefix(2)))
        #expect(first["next_after"] as? String == ids[1])
        let rest = try jsonObject(try temp.peerdOK(["entity", "list", "inspection", "--after", ids[1]], "a"))
        #expect((rest["entities"] as? [[String: Any]])?.map { $0["id"] as? String } == [ids[2]])
        #expect(rest["next_after"] is NSNull)
        try temp.peerdOK(["entity", "undo", "inspection", id], "a")
        let history = try jsonObject(try temp.peerdOK(["entity", "history", "inspection", id], "a"))
        #expect((history["events"] as? [Any])?.count == 3)
        // Items are written with `peerd item`, which keeps their rules.
        let item = try Executables.peerd(
            ["entity", "append", "item", id, #"{"type":"QuantityChanged","quantity":-3}"#], data: temp.url("a"))
        #expect(item.status == 1)
        #expect(item.stderr.contains("peerd item"), "\(item.stderr)")
        // The same replica served by its daemon answers alike.
        let a = try Daemon.start(data: temp.url("a"))
        let served = try a.api!.request("GET", "/entities/inspection/\(id)").text.trimmingCharacters(in: .newlines)
        let printed = try temp.peerdOK(["entity", "get", "inspection", id], "a")
        #expect(served == printed)
    }

    @Test("two replicas declared apart show their own versions; connected, both fold the higher one")
    func declaredApartThenConnected() throws {
        try temp.cluster("a", ["b"])
        try Self.inspection().write(toFile: temp.path("v1.json"), atomically: true, encoding: .utf8)
        try Self.inspection(version: 2).write(toFile: temp.path("v2.json"), atomically: true, encoding: .utf8)
        try temp.peerdOK(["domain", "declare", temp.path("v1.json")], "a")
        try temp.peerdOK(["entity", "append", "inspection", "i1", #"{"type":"FindingRecorded"}"#], "a")
        try temp.peerdOK(["domain", "declare", temp.path("v2.json")], "b")
        try temp.peerdOK(["entity", "append", "inspection", "i1", #"{"type":"FindingRecorded","count":5}"#], "b")
        let a = try Daemon.start(data: temp.url("a"))
        var b = try Daemon.start(data: temp.url("b"))
        #expect(try domains(a) == ["inspection": 1])
        #expect(try domains(b) == ["inspection": 2])
        #expect(try temp.peerdOK(["status"], "b").contains("domains     inspection=2"))
        // Apart, each folds i1 under its own declaration.
        #expect(try jsonObject(try a.api!.request("GET", "/entities/inspection/i1").text)["findings"] as? Int == 1)
        #expect(try jsonObject(try b.api!.request("GET", "/entities/inspection/i1").text)["findings"] as? Int == 5)
        #expect(try b.stop() == 0)
        b = try Daemon.start(data: temp.url("b"), peers: [a.address])
        try Convergence.wait([temp.url("a"), temp.url("b")])
        for daemon in [a, b] {
            #expect(try domains(daemon) == ["inspection": 2], "\(daemon.name)")
            // Under version 2 a FindingRecorded without its count is poison; b's adds 5.
            let state = try jsonObject(try daemon.api!.request("GET", "/entities/inspection/i1").text)
            #expect(state["findings"] as? Int == 5, "\(daemon.name): \(state)")
        }
    }

    @Test("Examples/Inspections/demo.sh declares, posts, refuses one event and converges two daemons")
    func inspectionsExample() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let script = root.appendingPathComponent("Examples/Inspections/demo.sh")
        let result = try ChildProcess.run(
            URL(fileURLWithPath: "/bin/bash"), [script.path],
            environment: ["PEERD": Executables.url("peerd").path, "TMPDIR": temp.path("")], timeout: .seconds(90))
        #expect(result.status == 0, "stdout: \(result.stdout)\nstderr: \(result.stderr)")
        #expect(result.stdout.contains("422 invalid_event, field site"), "\(result.stdout)")
        #expect(result.stdout.hasSuffix("converged\n"), "\(result.stdout)")
    }
}
