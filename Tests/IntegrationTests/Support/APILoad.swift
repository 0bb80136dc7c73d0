import DaemonClient
import Foundation
import Synchronization
import TestSupport
import Testing

/// The fields of a stored event's JSON line (a `POST /items` reply, a line of `peerd events --json`).
struct StoredEventReply {
    var eventID: String
    var replicaID: String
    var entityID: String

    init(_ text: String) throws {
        let event = try jsonObject(text)
        eventID = try #require(event["replica_event_id"] as? String, "\(text)")
        replicaID = try #require(event["replica_id"] as? String, "\(text)")
        entityID = try #require(event["entity_id"] as? String, "\(text)")
    }
}

/// One event of `GET /changes`: `id` (the local offset), `event`, and
/// `data: {"event":{…},"projection":{…}}`.
struct ChangeEvent {
    var offset: Int64
    var name: String?
    var eventID: String
    var replicaID: String
    var entityID: String
    var projectionID: String?
    var projectionName: String?

    init(_ sent: ServerSentEvent) throws {
        offset = try #require(sent.id.flatMap { Int64($0) }, "id \(sent.id ?? "nil") is not an offset")
        name = sent.event
        let data = try jsonObject(sent.data)
        let event = try #require(data["event"] as? [String: Any], "\(sent.data)")
        eventID = try #require(event["replica_event_id"] as? String, "\(sent.data)")
        replicaID = try #require(event["replica_id"] as? String, "\(sent.data)")
        entityID = try #require(event["entity_id"] as? String, "\(sent.data)")
        let projection = data["projection"] as? [String: Any]
        projectionID = projection?["id"] as? String
        projectionName = projection?["name"] as? String
    }
}

/// `DIR/daemon.json`.
struct DaemonFile {
    var pid: Int32

    init(_ data: URL) throws {
        let text = try String(contentsOf: data.appendingPathComponent("daemon.json"), encoding: .utf8)
        pid = try #require((try jsonObject(text))["pid"] as? Int32, "\(text)")
    }
}

func jsonObject(_ text: String) throws -> [String: Any] {
    try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], "not an object: \(text)")
}

/// The ids of the items `GET /items` lists.
func itemIDs(_ api: DaemonEndpoint) throws -> Set<String> {
    let reply = try api.request("GET", "/items")
    guard reply.status == 200 else { return [] }
    let items = try #require(try jsonObject(reply.text)["items"] as? [[String: Any]], "\(reply.text)")
    return Set(items.compactMap { $0["id"] as? String })
}

/// The value of the sample `series` (name and labels exactly) in Prometheus text.
func metricValue(_ text: String, _ series: String) -> Double? {
    text.split(separator: "\n").lazy.compactMap { line -> Double? in
        guard line.hasPrefix(series + " ") else { return nil }
        return Double(line.dropFirst(series.count + 1))
    }.first
}

/// The next event of `stream`, nil at its end; throws when none comes within
/// `timeout` (and closes the stream), so that a stream that stalls fails the
/// test instead of hanging it. `what` names the read in a failure.
func readEvent(
    _ stream: EventStream, _ what: String, within timeout: Duration = .seconds(10)
) throws -> ServerSentEvent? {
    let outcome = Mutex<Result<ServerSentEvent?, any Error>?>(nil)
    let done = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
        let result = Result { try stream.next() }
        outcome.withLock { $0 = result }
        done.signal()
    }
    let (seconds, attoseconds) = timeout.components
    if done.wait(timeout: .now() + Double(seconds) + Double(attoseconds) / 1e18) == .timedOut {
        stream.close()
        done.wait()
        throw ChildProcessError("\(what): nothing on the change stream within \(timeout)")
    }
    return try outcome.withLock { $0 }!.get()
}

/// The next event of `stream`, required.
func nextChange(
    _ stream: EventStream, _ what: String, sourceLocation: SourceLocation = #_sourceLocation
) throws -> ChangeEvent {
    let sent: ServerSentEvent?
    do {
        sent = try readEvent(stream, what)
    } catch let error as DaemonClientError {
        throw ChildProcessError("\(what): \(error)")
    }
    return try ChangeEvent(try #require(sent, "\(what): the stream ended", sourceLocation: sourceLocation))
}

/// Expects `stream` to end the way a chunked response ends (`next()` is nil), not to be cut off.
func expectEnd(_ stream: EventStream, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
    do {
        let event = try readEvent(stream, what)
        #expect(
            event == nil, "\(what): \(String(describing: event)) instead of the end", sourceLocation: sourceLocation)
    } catch let error as DaemonClientError {
        // HTTPServer.stop() closes the streams and at once calls MHD_stop_daemon, which shuts
        // the connections down before their threads have written the terminating chunk.
        Issue.record(
            "\(what): the daemon cut the change stream off without its terminating chunk (\(error))",
            sourceLocation: sourceLocation)
    } catch {
        Issue.record("\(what): \(error)", sourceLocation: sourceLocation)
    }
}

// MARK: - Load

/// Writers posting items as fast as the daemon takes them, recording
/// every acknowledged event id and what each request got once the stop began.
final class WriteLoad: Sendable {
    struct Outcomes {
        /// Replies (status, or "error" for no reply) that arrived after SIGTERM was sent.
        var afterStop: [String] = []
        /// Anything no daemon may answer: a 500, a 503 before the stop, a failure before the stop.
        var unexpected: [String] = []
    }

    let stopSent = Atomic<Bool>(false)
    /// Set once the daemon has ended (or was killed): every writer stops.
    let finished = Atomic<Bool>(false)
    private let acked = Mutex<[String]>([])
    private let recorded = Mutex(Outcomes())

    var acknowledged: [String] { acked.withLock { $0 } }
    var outcomes: Outcomes { recorded.withLock { $0 } }

    func write(to api: DaemonEndpoint, writer: Int) {
        var number = 0
        while !finished.load(ordering: .acquiring) {
            number += 1
            let body = #"{"name":"load \#(writer)-\#(number)","quantity":\#(number)}"#
            let outcome: String
            do {
                let reply = try api.request("POST", "/items", body: body, timeoutMs: 10_000)
                if reply.status == 201, let stored = try? StoredEventReply(reply.text) {
                    acked.withLock { $0.append(stored.eventID) }
                }
                outcome =
                    reply.status == 201 || reply.status == 503 ? String(reply.status) : "\(reply.status) \(reply.text)"
            } catch {
                outcome = "error"
            }
            let afterStop = stopSent.load(ordering: .acquiring)
            let expected = outcome == "201" || (afterStop && (outcome == "503" || outcome == "error"))
            recorded.withLock {
                if afterStop { $0.afterStop.append(outcome) }
                if !expected { $0.unexpected.append("writer \(writer) #\(number): \(outcome)") }
            }
            if outcome == "error" { return }
        }
    }
}

/// Requests that hammer a daemon's API, each kind checked for the status it must get.
final class Flood: Sendable {
    enum Kind: CaseIterable, CustomStringConvertible {
        case status, items, metrics, oversizedBody, garbageJSON, garbageBytes

        var description: String {
            switch self {
            case .status: "GET /status"
            case .items: "GET /items"
            case .metrics: "GET /metrics"
            case .oversizedBody: "POST /items over 1 MiB"
            case .garbageJSON: "POST /items with garbage JSON"
            case .garbageBytes: "garbage bytes"
            }
        }
    }

    /// 1 MiB of name and a little more: over the API's body limit.
    static let oversized = #"{"name":""# + String(repeating: "x", count: 1 << 20) + #"","quantity":1}"#

    let stop = Atomic<Bool>(false)
    private let done = Mutex<[Kind: Int]>([:])
    private let failures = Mutex<[String]>([])

    var counts: [Kind: Int] { done.withLock { $0 } }
    var unexpected: [String] { failures.withLock { $0 } }

    func run(against api: DaemonEndpoint, worker: Int) {
        var round = worker
        while !stop.load(ordering: .acquiring) {
            let kind = Kind.allCases[round % Kind.allCases.count]
            round += 1
            do {
                let status: Int
                let expected: Int
                switch kind {
                case .status: (status, expected) = (try api.request("GET", "/status").status, 200)
                case .items: (status, expected) = (try api.request("GET", "/items").status, 200)
                case .metrics: (status, expected) = (try api.request("GET", "/metrics").status, 200)
                case .oversizedBody:
                    (status, expected) = (try api.request("POST", "/items", body: Self.oversized).status, 413)
                case .garbageJSON:
                    (status, expected) = (try api.request("POST", "/items", body: "{\"name\": nope,,").status, 400)
                case .garbageBytes:
                    (status, expected) = (try Self.sendGarbage(port: api.port), 400)
                }
                if status != expected { failures.withLock { $0.append("\(kind): \(status), not \(expected)") } }
            } catch {
                failures.withLock { $0.append("\(kind): \(error)") }
            }
            done.withLock { $0[kind, default: 0] += 1 }
        }
    }

    /// Writes bytes that are no HTTP request on a fresh connection and
    /// returns the status of the reply, or 400 when the server just closes.
    static func sendGarbage(port: UInt16) throws -> Int {
        let connection = try RawConnection(port: port)
        connection.send([0x16, 0x03, 0x01, 0xFF, 0x00] + Array("\u{7F}GARBAGE \u{1}\u{2} ☃\r\n\r\n".utf8))
        let received = connection.receiveUntilClosed()
        let statusLine = String(decoding: received.prefix(while: { $0 != 13 }), as: UTF8.self).split(separator: " ")
        return statusLine.count >= 2 ? Int(statusLine[1]) ?? -1 : 400
    }
}
