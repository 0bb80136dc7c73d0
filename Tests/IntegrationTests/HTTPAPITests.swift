import DaemonClient
import Foundation
import Gossip
import PeerNet
import Replica
import SyncProtocol
import TestSupport
import Testing

/// The daemon's HTTP API (docs/http-api.md) against a real `peerd run`:
/// every endpoint, its error paths, and that a refused request changes
/// nothing.
@Suite("peerd run: HTTP API")
struct HTTPAPITests {
    let temp: TemporaryDirectory
    init() throws { temp = try TemporaryDirectory() }

    /// A fresh replica with a daemon serving its API on a free port.
    func daemon(_ name: String = "a", extra: [String] = []) throws -> (Daemon, DaemonEndpoint) {
        let created = try Executables.peerd(["init"], data: temp.url(name))
        try #require(created.status == 0, "peerd init: \(created.stderr)")
        let daemon = try Daemon.start(data: temp.url(name), extra: extra)
        return (daemon, try #require(daemon.api))
    }

    func json(_ reply: HTTPReply) throws -> JSONValue { try JSONValue.parse(reply.text) }

    /// The `error.code` of an error reply.
    func errorCode(_ reply: HTTPReply) -> String? { (try? json(reply))?["error"]?["code"]?.stringValue }

    func create(_ api: DaemonEndpoint, _ name: String, _ quantity: Int, headers: [(String, String)] = []) throws
        -> JSONValue
    {
        let reply = try api.request(
            "POST", "/items", body: "{\"name\":\(EventJSON.quoted(name)),\"quantity\":\(quantity)}", headers: headers)
        try #require(reply.status == 201, "POST /items: \(reply.status) \(reply.text)")
        return try json(reply)
    }

    func eventCount(_ api: DaemonEndpoint) throws -> Int64 {
        guard case .int(let count)? = try json(try api.request("GET", "/status"))["event_count"] else { return -1 }
        return count
    }

    @Test("items: create, read, edit, undo and list through the API")
    func itemLifecycle() throws {
        let (daemon, api) = try daemon()
        defer { _ = try? daemon.stop() }
        #expect(try json(try api.request("GET", "/health"))["status"]?.stringValue == "ok")
        // Each request is logged at debug level.
        #expect(daemon.waitForEvent(.httpRequest, ["method": "GET", "path": "/health", "status": "200"]))

        let created = try create(api, "Bolts", 5)
        let id = try #require(created["entity_id"]?.stringValue)
        #expect(
            created["payload"] == .object(["type": .string("Created"), "name": .string("Bolts"), "quantity": .int(5)]))
        #expect(created["server_offset"] == .int(1))
        _ = try create(api, "Anchors", 1)

        let renamed = try api.request("POST", "/items/\(id)/events", body: #"{"type":"Renamed","name":"Nuts"}"#)
        #expect(renamed.status == 201)
        let item = try json(try api.request("GET", "/items/\(id)"))
        #expect(item["name"]?.stringValue == "Nuts" && item["quantity"] == .int(5))

        let undo = try api.request("POST", "/items/\(id)/undo")
        #expect(undo.status == 201)
        #expect(try json(undo)["payload"]?["type"]?.stringValue == "Undone")
        #expect(try json(try api.request("GET", "/items/\(id)"))["name"]?.stringValue == "Bolts")

        #expect(try api.request("POST", "/items/\(id)/events", body: #"{"type":"Deleted"}"#).status == 201)
        let listed = try json(try api.request("GET", "/items"))["items"]
        guard case .array(let live)? = listed else {
            Issue.record("no items array: \(String(describing: listed))"); return
        }
        #expect(live.map { $0["name"]?.stringValue } == ["Anchors"])
        guard case .array(let all)? = try json(try api.request("GET", "/items?include_deleted=true"))["items"] else {
            Issue.record("no items array")
            return
        }
        #expect(all.map { $0["name"]?.stringValue } == ["Anchors", "Bolts"])
    }

    @Test("log: pages the raw log by local offset with next_offset, and /events/all streams every event")
    func eventPages() throws {
        let (daemon, api) = try daemon()
        defer { _ = try? daemon.stop() }
        for index in 1...5 { _ = try create(api, "item \(index)", index) }

        let first = try json(try api.request("GET", "/log?after=0&limit=2"))
        guard case .array(let page)? = first["events"] else { Issue.record("no events: \(first)"); return }
        #expect(page.map { $0["server_offset"] } == [.int(1), .int(2)])
        #expect(first["next_offset"] == .int(2))
        let last = try json(try api.request("GET", "/log?after=4&limit=2"))
        guard case .array(let tail)? = last["events"] else { Issue.record("no events: \(last)"); return }
        #expect(tail.map { $0["server_offset"] } == [.int(5)])
        #expect(last["next_offset"] == .null)

        let all = try json(try api.request("GET", "/events/all"))
        guard case .array(let every)? = all["events"] else { Issue.record("no events: \(all)"); return }
        #expect(every.map { $0["server_offset"] } == (1...5).map { .int($0) })
        #expect(all["next_offset"] == .null)
        // The same JSON shape as `peerd export`'s event lines (its proof lines follow them).
        let export = try Executables.peerd(["export"], data: temp.url("a"))
        let exported = try export.stdout.split(separator: "\n").map { try JSONValue.parse(String($0)) }
        #expect(Array(exported.prefix(every.count)) == every)
        #expect(exported.dropFirst(every.count).allSatisfy { $0["certificate"] != nil || $0["signed_head"] != nil })
    }

    @Test("status, peers and metrics describe the replica and its sync")
    func statusPeersMetrics() throws {
        let (a, apiA) = try daemon("a")
        defer { _ = try? a.stop() }
        let code = try Executables.peerd(["cluster-code"], data: temp.url("a")).stdout
            .trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(try Executables.peerd(["init", "--join", code], data: temp.url("b")).status == 0)
        let b = try Daemon.start(data: temp.url("b"), peers: [a.address])
        defer { _ = try? b.stop() }
        let apiB = try #require(b.api)
        _ = try create(apiA, "Washers", 7)

        var status = JSONValue.null
        let synced = try Poll.until(timeout: .seconds(20)) {
            status = try json(try apiB.request("GET", "/status"))
            return status["sync"]?["peers_in_sync"] == .int(1) && status["event_count"] == .int(1)
        }
        #expect(synced, "B never reported A in sync: \(status)")
        #expect(status["role"]?.stringValue == "peer" && status["feeds"] == .int(1))
        #expect(status["sync"]?["events_missing"] == .int(0) && status["sync"]?["peers_connected"] == .int(1))
        let statusA = try json(try apiA.request("GET", "/status"))
        #expect(statusA["state_hash"] == status["state_hash"])

        // In sync holds from equal cursors and the last comparison of states; A's state at the new
        // cursor reaches B in the next lull (docs/protocol.md "State summary").
        var peers = JSONValue.null
        let reported = try Poll.until(timeout: .seconds(20)) {
            peers = try json(try apiB.request("GET", "/peers"))
            guard case .array(let rows)? = peers["peers"] else { return false }
            return rows.first?["state_hash"] == statusA["state_hash"]
        }
        #expect(reported, "B's row never showed A's state hash: \(peers)")
        guard case .array(let rows)? = peers["peers"] else { Issue.record("no peers: \(peers)"); return }
        #expect(rows.count == 1)
        #expect(rows.first?["replica_id"] == statusA["replica_id"])
        #expect(rows.first?["state"]?.stringValue == "connected" && rows.first?["in_sync"] == .bool(true))
        #expect(rows.first?["state_verified"] == .bool(true))

        let metrics = try apiB.request("GET", "/metrics")
        #expect(metrics.status == 200 && metrics.headers["content-type"]?.hasPrefix("text/plain") == true)
        let lines = Set(metrics.text.split(separator: "\n").map(String.init))
        for line in [
            "peersync_events_ingested_total 1", "peersync_events 1", "peersync_peers_connected 1",
            "peersync_sync_latency_seconds_count 1", "peersync_feeds 1",
        ] {
            #expect(lines.contains(line), "missing \(line)")
        }
        #expect(lines.contains { $0.hasPrefix("peersync_bytes_received_total ") && !$0.hasSuffix(" 0") })
        let metricsA = try apiA.request("GET", "/metrics").text
        #expect(metricsA.contains("peersync_events_appended_total 1\n"))
        #expect(metricsA.contains("peersync_append_latency_seconds_count 1\n"))
    }

    @Test("bad requests get a fitting status and a JSON error, and change nothing")
    func badRequests() throws {
        let (daemon, api) = try daemon()
        defer { _ = try? daemon.stop() }
        let id = try #require(try create(api, "Bolts", 5)["entity_id"]?.stringValue)
        let before = try eventCount(api)
        let cases: [(String, String, String?, Int, String)] = [
            ("POST", "/items", "{not json", 400, "bad_request"),
            ("POST", "/items", "[1,2]", 400, "bad_request"),
            ("POST", "/items", #"{"name":"","quantity":1}"#, 422, "invalid_event"),
            ("POST", "/items", #"{"name":"x","quantity":-1}"#, 422, "invalid_event"),
            ("POST", "/items", #"{"name":"x","quantity":"many"}"#, 422, "invalid_event"),
            ("POST", "/items/\(id)/events", #"{"type":"Teleported"}"#, 422, "invalid_event"),
            ("POST", "/items/\(id)/events", #"{"type":"QuantityChanged"}"#, 422, "invalid_event"),
            ("POST", "/items/\(id)/events", #"{"type":"QuantityChanged","quantity":-1}"#, 422, "invalid_event"),
            ("POST", "/items/\(id)/events", #"{"type":"Renamed","name":"  "}"#, 422, "invalid_event"),
            ("POST", "/items/\(id)/events", #"{"name":"no type"}"#, 422, "invalid_event"),
            ("POST", "/items/\(id)/events", #"{"type":"Created","name":"x","quantity":1}"#, 422, "invalid_event"),
            ("POST", "/items/no-such-item/events", #"{"type":"Deleted"}"#, 404, "not_found"),
            ("POST", "/items/no-such-item/undo", nil, 404, "not_found"),
            ("GET", "/items/no-such-item", nil, 404, "not_found"),
            ("GET", "/nowhere", nil, 404, "not_found"),
            ("DELETE", "/items", nil, 405, "method_not_allowed"),
            ("POST", "/status", "{}", 405, "method_not_allowed"),
            ("GET", "/log?after=-1", nil, 400, "bad_request"),
            ("GET", "/log?limit=0", nil, 400, "bad_request"),
            ("GET", "/log?after=x", nil, 400, "bad_request"),
            ("GET", "/events?after=-1", nil, 400, "bad_request"),
            ("GET", "/events?limit=10001", nil, 400, "bad_request"),
            ("GET", "/events?limit=x", nil, 400, "bad_request"),
            ("POST", "/events", "{}", 400, "bad_request"),
            ("DELETE", "/events", nil, 405, "method_not_allowed"),
            ("GET", "/changes?after=soon", nil, 400, "bad_request"),
        ]
        for (method, path, body, status, code) in cases {
            let reply = try api.request(method, path, body: body)
            #expect(
                reply.status == status && errorCode(reply) == code,
                "\(method) \(path) \(body ?? ""): \(reply.status) \(reply.text)")
        }
        // Past the undo limit of 10 in a row, an undo is refused.
        for quantity in 1...11 {
            let body = "{\"type\":\"QuantityChanged\",\"quantity\":\(quantity)}"
            #expect(try api.request("POST", "/items/\(id)/events", body: body).status == 201)
        }
        let undos = try (0..<10).map { _ in try api.request("POST", "/items/\(id)/undo").status }
        #expect(undos == Array(repeating: 201, count: 10))
        let eleventh = try api.request("POST", "/items/\(id)/undo")
        #expect(eleventh.status == 422 && errorCode(eleventh) == "cannot_undo", "\(eleventh.text)")
        #expect(eleventh.text.contains("10 consecutive undos"), "\(eleventh.text)")
        #expect(try eventCount(api) == before + 21)

        // An item that is deleted takes no edits until it is undone.
        #expect(try api.request("POST", "/items/\(id)/events", body: #"{"type":"Deleted"}"#).status == 201)
        let edit = try api.request("POST", "/items/\(id)/events", body: #"{"type":"Renamed","name":"x"}"#)
        #expect(edit.status == 409 && errorCode(edit) == "deleted")
        #expect(try eventCount(api) == before + 22)
    }

    @Test("a body over 1 MiB gets 413, declared or sent, and the daemon serves on")
    func oversizedBodies() throws {
        let (daemon, api) = try daemon()
        defer { _ = try? daemon.stop() }
        let huge = "{\"name\":\"" + String(repeating: "x", count: 1 << 21) + "\",\"quantity\":1}"
        let reply = try api.request("POST", "/items", body: huge)
        #expect(reply.status == 413 && errorCode(reply) == "too_large")
        // Chunked, with no Content-Length to refuse it up front.
        let socket = try Socket.connect(host: api.host, port: api.port)
        var request = "POST /items HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
        for _ in 0..<20 {
            request += String(128 << 10, radix: 16) + "\r\n" + String(repeating: "y", count: 128 << 10) + "\r\n"
        }
        request += "0\r\n\r\n"
        try socket.send(Array(request.utf8))
        var answer: [UInt8] = []
        while true {
            let bytes = try socket.receive()
            if bytes.isEmpty { break }
            answer += bytes
        }
        #expect(String(decoding: answer, as: UTF8.self).hasPrefix("HTTP/1.1 413"))
        #expect(try eventCount(api) == 0)
        #expect(try api.request("GET", "/health").status == 200)
    }

    @Test("an Idempotency-Key makes a retry return the first event, also from the CLI")
    func idempotencyKey() throws {
        let (daemon, api) = try daemon()
        defer { _ = try? daemon.stop() }
        let key = [("Idempotency-Key", "order-17")]
        let first = try create(api, "Bolts", 5, headers: key)
        let retry = try create(api, "Bolts", 5, headers: key)
        #expect(first["replica_event_id"] == retry["replica_event_id"])
        let id = try #require(first["entity_id"]?.stringValue)
        let undoKey = [("Idempotency-Key", "undo-1")]
        let undo = try api.request("POST", "/items/\(id)/undo", headers: undoKey)
        let undoAgain = try api.request("POST", "/items/\(id)/undo", headers: undoKey)
        #expect(undo.status == 201 && undoAgain.status == 201)
        #expect(try json(undo)["replica_event_id"] == json(undoAgain)["replica_event_id"])
        #expect(try eventCount(api) == 2)

        // The CLI goes through the daemon's API while it runs.
        let cli = ["item", "create", "Nuts", "3", "--idempotency-key", "order-18", "--json"]
        let one = try Executables.peerd(cli, data: temp.url("a"))
        let two = try Executables.peerd(cli, data: temp.url("a"))
        #expect(one.status == 0 && one.stdout == two.stdout, "\(one.stderr)")
        #expect(try eventCount(api) == 3)
        #expect(try api.request("GET", "/metrics").text.contains("peersync_events_appended_total 3\n"))

        // Refused through the daemon, an edit of a deleted item gets the CLI's hint, not the API route's.
        let nuts = try #require(try JSONValue.parse(one.stdout)["entity_id"]?.stringValue)
        #expect(try Executables.peerd(["item", "delete", nuts], data: temp.url("a")).status == 0)
        let refused = try Executables.peerd(["item", "rename", nuts, "Washers"], data: temp.url("a"))
        #expect(refused.status == 1)
        #expect(
            refused.stderr.contains("item \(nuts) is deleted; `peerd item undo \(nuts)` restores it"),
            "\(refused.stderr)")
    }

    @Test("identical writes within the double-tap window store one event; --double-tap-ms 0 turns it off")
    func doubleTap() throws {
        let (daemon, api) = try daemon("a", extra: ["--double-tap-ms", "10000"])
        defer { _ = try? daemon.stop() }
        let first = try create(api, "Bolts", 5)
        let second = try create(api, "Bolts", 5)
        #expect(first["replica_event_id"] == second["replica_event_id"])
        let id = try #require(first["entity_id"]?.stringValue)
        let note = #"{"type":"NoteChanged","note":"aisle 4"}"#
        let tap = try api.request("POST", "/items/\(id)/events", body: note)
        let again = try api.request("POST", "/items/\(id)/events", body: note)
        #expect(try json(tap)["replica_event_id"] == json(again)["replica_event_id"])
        // A different payload is not a double tap.
        #expect(
            try api.request("POST", "/items/\(id)/events", body: #"{"type":"NoteChanged","note":"aisle 5"}"#).status
                == 201)
        #expect(try eventCount(api) == 3)

        let (off, offAPI) = try self.daemon("b", extra: ["--double-tap-ms", "0"])
        defer { _ = try? off.stop() }
        #expect(try create(offAPI, "Bolts", 5)["replica_event_id"] != create(offAPI, "Bolts", 5)["replica_event_id"])
        #expect(try eventCount(offAPI) == 2)
    }

    @Test("with a token file every request needs the bearer token; a non-loopback address needs one")
    func bearerToken() throws {
        let tokenFile = temp.url("token")
        try "s3cret-token-0123456789\n".write(to: tokenFile, atomically: true, encoding: .utf8)
        let (daemon, api) = try daemon("a", extra: ["--http-token-file", tokenFile.path])
        defer { _ = try? daemon.stop() }
        for token in [nil, "wrong-token-0123456789", "s3cret-token-012345678"] {
            var endpoint = api
            endpoint.token = token
            let reply = try endpoint.request("POST", "/items", body: #"{"name":"x","quantity":1}"#)
            #expect(reply.status == 401 && errorCode(reply) == "unauthorized", "token \(token ?? "none")")
        }
        var authorized = api
        authorized.token = "s3cret-token-0123456789"
        #expect(try authorized.request("GET", "/items").status == 200)
        #expect(try authorized.request("GET", "/status")["event_count"] == .int(0))
        // The CLI reads the token file named in daemon.json.
        let cli = try Executables.peerd(["item", "create", "Bolts", "1"], data: temp.url("a"))
        #expect(cli.status == 0, "\(cli.stderr)")
        #expect(try authorized.request("GET", "/status")["event_count"] == .int(1))

        let exposed = try Executables.peerd(
            ["run", "--listen", "127.0.0.1:0", "--no-mdns", "--http", "0.0.0.0:0"], data: temp.url("a"))
        #expect(exposed.status == 78 && exposed.stderr.contains("--http-token-file"), "\(exposed.stderr)")
    }

    @Test("bad flags for the API are refused before anything starts")
    func badFlags() throws {
        #expect(try Executables.peerd(["init"], data: temp.url("a")).status == 0)
        for (flags, message) in [
            (["--http", "nowhere"], "--http needs HOST:PORT or off"),
            (["--double-tap-ms", "-5"], "--double-tap-ms"),
            (["--http-token-file", temp.url("missing").path], "cannot read the HTTP token file"),
        ] {
            let result = try Executables.peerd(
                ["run", "--listen", "127.0.0.1:0", "--no-mdns"] + flags, data: temp.url("a"))
            #expect(result.status != 0 && result.stderr.contains(message), "\(flags): \(result.stderr)")
        }
    }
}

extension HTTPReply {
    /// A field of the JSON body.
    subscript(_ key: String) -> JSONValue? { (try? JSONValue.parse(text))?[key] }
}
