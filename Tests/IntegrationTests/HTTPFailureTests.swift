import DaemonClient
import Foundation
import Glibc
import PeerNet
import Replica
import SyncProtocol
import TestSupport
import Testing

/// What a client sees when something is wrong with a request or with the
/// daemon's storage: a body that is not UTF-8, a streamed response whose
/// read fails midway, a request libmicrohttpd refuses by itself, and the
/// Swift client's view of a reply cut off.
@Suite("peerd run: HTTP failures a client can see")
struct HTTPFailureTests {
    let temp: TemporaryDirectory
    init() throws { temp = try TemporaryDirectory() }

    func daemon(_ name: String = "a") throws -> (Daemon, DaemonEndpoint) {
        let created = try Executables.peerd(["init"], data: temp.url(name))
        try #require(created.status == 0, "peerd init: \(created.stderr)")
        let daemon = try Daemon.start(data: temp.url(name))
        return (daemon, try #require(daemon.api))
    }

    /// Sends `head` and `body` as one request and reads the reply to the close.
    func rawRequest(_ port: UInt16, _ head: String, body: [UInt8]) throws -> RawReply {
        let connection = try RawConnection(port: port)
        connection.send(
            Array((head + "Content-Length: \(body.count)\r\nConnection: close\r\n\r\n").utf8) + body)
        return RawReply(connection.receive(count: Int.max))
    }

    @Test("a body that is not valid UTF-8 gets 400 bad_request and stores nothing")
    func invalidUTF8Body() throws {
        let (daemon, api) = try daemon()
        defer { _ = try? daemon.stop() }
        let item = try StoredEventReply(
            try api.request("POST", "/items", body: #"{"name":"Bolts","quantity":5}"#).text)
        let before = try api.request("GET", "/items").text

        let name = Array(#"{"name":""#.utf8) + [0x42, 0xFF, 0xFE] + Array(#"","quantity":1}"#.utf8)
        let created = try rawRequest(api.port, "POST /items HTTP/1.1\r\nHost: 127.0.0.1\r\n", body: name)
        #expect(created.status == 400, "\(created.head)")
        #expect(created.text.contains("\"bad_request\""), "\(created.text)")
        #expect(created.text.contains("not valid UTF-8 (byte 10)"), "\(created.text)")

        let note = Array(#"{"type":"NoteChanged","note":"caf"#.utf8) + [0xC3] + Array(#""}"#.utf8)
        let edited = try rawRequest(
            api.port, "POST /items/\(item.entityID)/events HTTP/1.1\r\nHost: 127.0.0.1\r\n", body: note)
        #expect(edited.status == 400 && edited.text.contains("not valid UTF-8"), "\(edited.head) \(edited.text)")

        #expect(try api.request("GET", "/items").text == before)
        #expect(try api.request("GET", "/status")["event_count"] == .int(1))
    }

    @Test("/events/all whose storage read fails midway ends without its final chunk, and request throws")
    func eventArrayFailingMidway() throws {
        try #require(try Executables.peerd(["init"], data: temp.url("a")).status == 0)
        let database = temp.url("a").appendingPathComponent("replica.db").path
        do {
            let log = try EventLog.open(at: database)
            try log.append((1...1_500).map { NewEvent(item: "item-\($0)", .created(name: "Item \($0)", quantity: 1)) })
        }
        let daemon = try Daemon.start(data: temp.url("a"))
        defer { _ = try? daemon.stop() }
        let api = try #require(daemon.api)

        // Damage the 1,500th event: the first page of 1,000 reads and is sent, the second fails.
        let sqlite = { (sql: String) throws -> String in
            let result = try Executables.runSystem("sqlite3", ["-cmd", ".timeout 5000", database, sql])
            try #require(result.status == 0, "sqlite3 \(sql): \(result.stderr)")
            return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        let eventID = try sqlite("SELECT hex(event_id) FROM events WHERE local_offset = 1500")
        _ = try sqlite("UPDATE events SET event_id = X'00' WHERE local_offset = 1500")

        let raw = try RawConnection(port: api.port)
        raw.send(Array("GET /events/all HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".utf8))
        let reply = RawReply(raw.receive(count: Int.max))
        #expect(reply.status == 200 && reply.head.lowercased().contains("transfer-encoding: chunked"), "\(reply.head)")
        let (data, terminated) = reply.chunks
        let sent = String(decoding: data, as: UTF8.self)
        #expect(
            sent.hasPrefix("{\"events\":[") && sent.contains("\"entity_id\":\"item-1000\""), "the first page was sent")
        #expect(!sent.contains("item-1001\""), "nothing of the failed page was sent")
        #expect(!terminated, "the body ends with a terminating chunk: \(reply.text.suffix(80))")

        let outcome = Result { try api.request("GET", "/events/all") }
        guard case .failure(let error) = outcome else {
            Issue.record(
                "GET /events/all returned \(String(describing: try? outcome.get().status)) instead of throwing")
            return
        }
        #expect(error is DaemonClientError && "\(error)".contains("cut off"), "\(error)")
        #expect(
            daemon.waitForEvent(.httpStreamFailed) { $0["error"]?.contains("malformed event_id") == true },
            "\(daemon.stderr)")

        // Repaired, the same request reads every event: the daemon served on.
        _ = try sqlite("UPDATE events SET event_id = X'\(eventID)' WHERE local_offset = 1500")
        let whole = try JSONValue.parse(try api.request("GET", "/events/all").text)
        guard case .array(let events)? = whole["events"] else { Issue.record("no events: \(whole)"); return }
        #expect(events.count == 1_500 && whole["next_offset"] == .null)
    }

    @Test("libmicrohttpd's own 400 for a malformed request is counted in /metrics")
    func ownErrorsCounted() throws {
        let (daemon, api) = try daemon()
        defer { _ = try? daemon.stop() }
        let before = try api.request("GET", "/metrics").text
        #expect(metricValue(before, #"peersync_http_requests_total{code="400"}"#) == nil, "\(before)")
        for _ in 0..<3 { #expect(try Flood.sendGarbage(port: api.port) == 400) }
        let after = try api.request("GET", "/metrics").text
        #expect(metricValue(after, #"peersync_http_requests_total{code="400"}"#) == 3, "\(after)")
    }

    @Test("DaemonEndpoint.request throws when a reply is cut off, chunked or with Content-Length")
    func clientSeesCutOff() throws {
        let cases: [(String, Bool)] = [
            ("Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n", false),
            ("Transfer-Encoding: chunked\r\n\r\n5\r\nhel", false),
            ("Content-Length: 10\r\n\r\nhello", false),
            ("Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", true),
            ("Content-Length: 5\r\n\r\nhello", true),
        ]
        for (rest, complete) in cases {
            let server = try Socket.listen(host: "127.0.0.1", port: 0)
            let endpoint = DaemonEndpoint(host: "127.0.0.1", port: server.localPort)
            let answered = DispatchSemaphore(value: 0)
            Thread.detachNewThread {
                defer { answered.signal() }
                guard let client = try? server.accept() else { return }
                _ = try? client.receive()
                try? client.send(Array(("HTTP/1.1 200 OK\r\n" + rest).utf8))
                client.shutdown()
            }
            let outcome = Result { try endpoint.request("GET", "/events/all", timeoutMs: 5_000) }
            answered.wait()
            switch outcome {
            case .success(let reply):
                #expect(complete && reply.text == "hello", "\(rest.debugDescription): \(reply.text)")
            case .failure(let error):
                #expect(!complete && "\(error)".contains("cut off"), "\(rest.debugDescription): \(error)")
            }
        }
    }
}
