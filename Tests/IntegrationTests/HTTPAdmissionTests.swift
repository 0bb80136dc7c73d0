import DaemonClient
import Foundation
import Glibc
import SyncProtocol
import TestSupport
import Testing

/// How the HTTP API copes with many connections at once (docs/http-api.md,
/// "Connections"): idle change streams and slow clients take no thread and
/// lock no one out, shutdown still ends every stream, and a chunked body
/// over the limit is refused while it is still arriving.
@Suite("peerd run: HTTP connections and admission")
struct HTTPAdmissionTests {
    let temp: TemporaryDirectory
    init() throws { temp = try TemporaryDirectory() }

    /// A fresh replica with a daemon serving its API on a free port.
    func daemon(_ name: String = "a") throws -> (Daemon, DaemonEndpoint) {
        let created = try Executables.peerd(["init"], data: temp.url(name))
        try #require(created.status == 0, "peerd init: \(created.stderr)")
        let daemon = try Daemon.start(data: temp.url(name), logLevel: "info")
        try #require(daemon.waitForEvent(.replicaRunning), "\(daemon.stderr)")
        return (daemon, try #require(daemon.api))
    }

    @Test("300 idle change streams and 256 slow connections lock no client out and cost no threads")
    func idleStreamsAndSlowClients() throws {
        let (daemon, api) = try daemon()
        defer { _ = try? daemon.stop() }
        let pid = daemon.child.pid
        // Reads open the API's database connection fully before the census.
        #expect(try api.request("GET", "/health").status == 200 && itemIDs(api).isEmpty)
        let idleThreads = try ProcessCensus.threads(pid)
        let idleDescriptors = try ProcessCensus.descriptors(pid)

        let streams = try (0..<300).map { _ in try api.events("/changes") }
        #expect(streams.allSatisfy { $0.status == 200 })
        let heads = try (0..<256).map { _ in try RawConnection(port: api.port) }
        for head in heads { head.send(Array("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ".utf8)) }
        let slow = Trickle(heads, every: 2) { _ in UInt8(ascii: "a") }
        defer { slow.stop() }

        var slowest = 0.0
        var failures: [String] = []
        for number in 0..<50 {
            let took = try seconds {
                let reply =
                    number % 2 == 0
                    ? try api.request("GET", "/health", timeoutMs: 5_000)
                    : try api.request(
                        "POST", "/items", body: #"{"name":"Item \#(number)","quantity":1}"#, timeoutMs: 5_000)
                if reply.status != (number % 2 == 0 ? 200 : 201) { failures.append("#\(number): \(reply.status)") }
            }
            slowest = max(slowest, took)
        }
        #expect(failures.isEmpty, "\(failures)")
        #expect(slowest < 3, "the slowest of 50 requests took \(slowest) s")
        let loadedThreads = try ProcessCensus.threads(pid)
        #expect(loadedThreads < 40, "\(loadedThreads) threads with 556 connections open (\(idleThreads) idle)")

        // Every stream is alive and carried the 25 items made meanwhile, then
        // carries the next one; the slow connections are still held open.
        let made = try StoredEventReply(
            try api.request("POST", "/items", body: #"{"name":"Last","quantity":1}"#).text)
        var wrong: [String] = []
        for (index, stream) in streams.enumerated() {
            var offsets: [Int64] = []
            var last: ChangeEvent?
            while last?.eventID != made.eventID && offsets.count < 26 {
                last = try nextChange(stream, "stream \(index), event \(offsets.count + 1)")
                offsets.append(last!.offset)
            }
            if offsets != Array(1...26) { wrong.append("stream \(index): \(offsets)") }
        }
        #expect(wrong.isEmpty, "\(wrong.prefix(5))")
        #expect(slow.openCount == 256, "\(slow.openCount) of 256 slow connections still open")

        // Once the clients leave, the daemon lets their connections go and
        // serves on: a change stream's within a second or two (the server
        // looks at waiting streams every second), a slow one's at the latest
        // when it has been idle for the 20 s timeout (libmicrohttpd 0.9.75
        // may miss an end of stream that arrives with the last bytes).
        for stream in streams { stream.close() }
        slow.stop()
        let streamsReleased = try Poll.until(timeout: .seconds(5), every: .milliseconds(100)) {
            try ProcessCensus.descriptors(pid) <= idleDescriptors + 256 + 5
        }
        let afterStreams = try ProcessCensus.descriptors(pid)
        #expect(
            streamsReleased, "\(afterStreams) descriptors open 5 s after the streams closed, \(idleDescriptors) before")
        let released = try Poll.until(timeout: .seconds(30), every: .milliseconds(200)) {
            try ProcessCensus.descriptors(pid) <= idleDescriptors + 5
        }
        let left = try ProcessCensus.descriptors(pid)
        #expect(released, "\(left) descriptors open, \(idleDescriptors) before")
        #expect(try api.request("GET", "/health").status == 200)
        #expect(try ProcessCensus.threads(pid) < 40)
    }

    @Test("SIGTERM ends each of 100 open change streams with its final chunk, within 5 s")
    func shutdownEndsManyStreams() throws {
        let (daemon, api) = try daemon()
        let streams = try (0..<100).map { _ in try api.events("/changes?after=0") }
        _ = try api.request("POST", "/items", body: #"{"name":"Bolts","quantity":5}"#)
        for (index, stream) in streams.enumerated() { _ = try nextChange(stream, "stream \(index)") }
        var exit: Int32 = -1
        let took = try seconds { exit = try daemon.stop(timeout: .seconds(5)) }
        #expect(exit == 0, "\(daemon.stderr)")
        #expect(took < 5, "stopped in \(took) s")
        #expect(daemon.events(.shutdownOverdue).isEmpty)
        for (index, stream) in streams.enumerated() { expectEnd(stream, "stream \(index) after SIGTERM") }
    }

    @Test("a chunked body of 8 MiB gets 413 once a little over 1 MiB is sent, not after the upload")
    func chunkedOversizeRefusedEarly() throws {
        let (daemon, api) = try daemon()
        defer { _ = try? daemon.stop() }
        let connection = try RawConnection(port: api.port)
        connection.send(
            Array("POST /items HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n".utf8))
        let piece = 64 << 10
        let chunk = Array((String(piece, radix: 16) + "\r\n" + String(repeating: "y", count: piece) + "\r\n").utf8)
        var sent = 0
        var answered = false
        // Each piece, then a short look for the reply: the daemon reads as fast as this sends.
        while sent < 8 << 20 && !answered {
            let accepted = connection.send(chunk)
            sent += accepted
            answered = connection.waitReadable(milliseconds: 5) || accepted < chunk.count
        }
        let reply = RawReply(connection.receive(count: Int.max))
        #expect(answered && reply.status == 413, "after \(sent) bytes: \(reply.head)")
        #expect(reply.text.contains("\"too_large\""), "\(reply.text)")
        #expect(sent > 1 << 20 && sent <= 2 << 20, "\(sent) bytes sent before the 413")

        #expect(try itemIDs(api).isEmpty)
        let metrics = try api.request("GET", "/metrics").text
        #expect(metricValue(metrics, #"peersync_http_requests_total{code="413"}"#) == 1, "\(metrics)")
    }
}
