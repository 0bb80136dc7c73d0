import DaemonClient
import Foundation
import Replica
import TestSupport
import Testing

/// Refusals of malformed requests, from a real daemon over a raw TCP
/// socket: one status line, each header once, and a `Content-Length` that
/// is the body's. libmicrohttpd 0.9.75 sent the header block of its refusal
/// of an unreadable `Content-Length` twice.
@Suite("peerd run: a refused request gets one header block")
struct HTTPRefusalHeaderTests {
    let temp: TemporaryDirectory
    init() throws { temp = try TemporaryDirectory() }

    /// Sends `request` as it is and reads the reply until the daemon closes.
    func send(_ request: String, to port: UInt16) throws -> (reply: RawReply, raw: String) {
        let connection = try RawConnection(port: port)
        connection.send(Array(request.utf8))
        let bytes = connection.receiveUntilClosed()
        return (RawReply(bytes), String(decoding: bytes, as: UTF8.self))
    }

    /// The header names of a reply's head, lowercased, in order.
    func headerNames(_ reply: RawReply) -> [String] {
        reply.head.components(separatedBy: "\r\n").dropFirst().compactMap { line in
            line.firstIndex(of: ":").map { line[..<$0].lowercased() }
        }
    }

    @Test(
        "an unreadable Content-Length is refused once, with each header once and the API's error body",
        arguments: [
            ("abc", 400, "bad_request"), ("-1", 400, "bad_request"), ("12 34", 400, "bad_request"),
            ("99999999999999999999999", 413, "too_large"),
        ])
    func unreadableContentLength(_ declared: String, _ status: Int, _ code: String) throws {
        try temp.peerdOK(["init"], "a")
        let daemon = try Daemon.start(data: temp.url("a"))
        defer { _ = try? daemon.stop() }
        let api = try #require(daemon.api)
        let (reply, raw) = try send(
            "POST /items HTTP/1.1\r\nHost: localhost\r\nContent-Length: \(declared)\r\n\r\n", to: api.port)
        #expect(reply.status == status, "\(raw)")
        #expect(raw.components(separatedBy: "HTTP/1.1 ").count == 2, "one status line: \(raw)")
        let names = headerNames(reply)
        #expect(Set(names).count == names.count, "a header twice: \(names)")
        #expect(names.contains("connection") && names.contains("content-length"), "\(names)")
        let length = reply.head.components(separatedBy: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
        #expect(
            length.map { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) }
                == reply.body.count)
        let error = try JSONValue.parse(reply.text)["error"]
        #expect(error?["code"] == .string(code), "\(reply.text)")
        // The daemon still answers, and counted the refusal once.
        let metrics = try api.request("GET", "/metrics").text
        #expect(metrics.contains(#"peersync_http_requests_total{code="\#(status)"} 1"#), "\(metrics)")
        #expect(try api.request("GET", "/health").status == 200)
    }

    @Test("libmicrohttpd's own 400 and the daemon's 400 carry each header once")
    func otherRefusalsHaveOneHeaderBlock() throws {
        try temp.peerdOK(["init"], "a")
        let daemon = try Daemon.start(data: temp.url("a"))
        defer { _ = try? daemon.stop() }
        let api = try #require(daemon.api)
        for request in [
            "GET /items HTTP/1.1\r\nHost: localhost\r\nBad Header\r\n\r\n",
            "POST /items HTTP/1.1\r\nHost: localhost\r\nContent-Length: 3\r\nConnection: close\r\n\r\n{{{",
        ] {
            let (reply, raw) = try send(request, to: api.port)
            #expect(reply.status == 400, "\(raw)")
            #expect(raw.components(separatedBy: "HTTP/1.1 ").count == 2, "one status line: \(raw)")
            let names = headerNames(reply)
            #expect(Set(names).count == names.count, "a header twice: \(names)")
        }
    }
}
