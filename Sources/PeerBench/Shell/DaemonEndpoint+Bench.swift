import DaemonClient
import Foundation

extension DaemonEndpoint {
    /// The API of a daemon on 127.0.0.1.
    static func local(_ port: UInt16) -> DaemonEndpoint { DaemonEndpoint(host: "127.0.0.1", port: port) }

    /// One request that gives up when no answer came for `seconds`.
    func send(_ method: String, _ path: String, body: String? = nil, seconds: Double = 10) throws -> HTTPReply {
        try request(method, path, body: body, timeoutMs: Int(seconds * 1000))
    }

    /// `POST /items` of an item named `name`; throws unless it answers 201.
    @discardableResult
    func createItem(_ name: String, quantity: Int = 1, seconds: Double = 10) throws -> HTTPReply {
        let reply = try send("POST", "/items", body: #"{"name":"\#(name)","quantity":\#(quantity)}"#, seconds: seconds)
        guard reply.status == 201 else { throw ProbeError.malformed("POST /items: \(reply.statusLine)") }
        return reply
    }

    /// `GET path` as a JSON object; throws unless the status is 200.
    func json(_ path: String, seconds: Double = 10) throws -> [String: Any] {
        let reply = try send("GET", path, seconds: seconds)
        guard reply.status == 200,
            let object = try JSONSerialization.jsonObject(with: Data(reply.body)) as? [String: Any]
        else { throw ProbeError.malformed("GET \(path): \(reply.statusLine)") }
        return object
    }

    /// `event_count` of `GET /status`.
    func eventCount(seconds: Double = 10) throws -> Int {
        guard let count = try json("/status", seconds: seconds)["event_count"] as? Int else {
            throw ProbeError.malformed("GET /status has no event_count")
        }
        return count
    }

    /// The value of the counter `name` in `GET /metrics`.
    func metric(_ name: String) throws -> Double {
        let text = try send("GET", "/metrics").text
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(name + " ") }),
            let value = Double(line.dropFirst(name.count + 1))
        else { throw ProbeError.malformed("\(host):\(port)/metrics has no \(name)") }
        return value
    }

    /// `sync.peers_connected` of `GET /status`.
    func peersConnected(seconds: Double = 10) throws -> Int {
        guard let count = (try json("/status", seconds: seconds)["sync"] as? [String: Any])?["peers_connected"] as? Int
        else { throw ProbeError.malformed("GET /status has no sync.peers_connected") }
        return count
    }
}

extension HTTPReply {
    /// `HTTP 201`, for the report.
    var statusLine: String { "HTTP \(status)" }

    /// The string value of a top-level field of a JSON object body.
    func field(_ name: String) -> String? {
        (try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])?[name] as? String
    }
}

/// Requests that ended at their deadline, not earlier: a failure the
/// report counts as timed out.
func reachedDeadline(since start: ContinuousClock.Instant, seconds: Double) -> Bool {
    (ContinuousClock.now - start).seconds >= seconds * 0.95
}
