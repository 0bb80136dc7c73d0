import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A daemon's HTTP API on 127.0.0.1, spoken from outside over a fresh
/// connection per request (`Connection: close`), every exchange under one
/// deadline.
///
/// ```swift
/// let api = HTTPClient(port: 4000)
/// let answer = try api.send("POST", "/items", body: Array(#"{"name":"x","quantity":1}"#.utf8))
/// ```
struct HTTPClient: Sendable {
    /// The HTTP port.
    let port: UInt16

    /// Sends one request and reads the whole answer within `seconds`.
    func send(
        _ method: String, _ path: String, body: [UInt8]? = nil, headers: [(String, String)] = [],
        seconds: Double = 10
    ) throws -> HTTPAnswer {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        let socket = try ProbeSocket.connect(port: port, seconds: seconds)
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if let body { head += "Content-Type: application/json\r\nContent-Length: \(body.count)\r\n" }
        try socket.sendAll(Array((head + "\r\n").utf8) + (body ?? []), until: deadline)
        var reader = HTTPReader(socket: socket, deadline: deadline)
        var answer = try reader.head()
        answer.body = try reader.wholeBody(of: answer)
        return answer
    }

    /// `GET path` as a JSON object; throws unless the status is 200.
    func json(_ path: String, seconds: Double = 10) throws -> [String: Any] {
        let answer = try send("GET", path, seconds: seconds)
        guard answer.status == 200 else { throw ProbeError.malformed("GET \(path): \(answer.statusLine)") }
        guard let object = try JSONSerialization.jsonObject(with: Data(answer.body)) as? [String: Any] else {
            throw ProbeError.malformed("GET \(path) did not answer a JSON object")
        }
        return object
    }

    /// `event_count` of `GET /status`.
    func eventCount(seconds: Double = 10) throws -> Int {
        guard let count = try json("/status", seconds: seconds)["event_count"] as? Int else {
            throw ProbeError.malformed("GET /status has no event_count")
        }
        return count
    }

    /// `sync.peers_connected` of `GET /status`.
    func peersConnected(seconds: Double = 10) throws -> Int {
        let sync = try json("/status", seconds: seconds)["sync"] as? [String: Any]
        guard let count = sync?["peers_connected"] as? Int else {
            throw ProbeError.malformed("GET /status has no sync.peers_connected")
        }
        return count
    }
}

/// One HTTP answer: the status line, headers (names lowercased) and body.
struct HTTPAnswer: Sendable {
    /// E.g. `HTTP/1.1 201 Created`.
    var statusLine: String
    var status: Int
    var headers: [String: String]
    var body: [UInt8] = []

    /// The body as UTF-8 text (invalid bytes replaced).
    var text: String { String(decoding: body, as: UTF8.self) }

    /// Parses a response head (without its blank line).
    init(head: String) throws {
        var lines = head.components(separatedBy: "\r\n")
        statusLine = lines.removeFirst()
        let parts = statusLine.split(separator: " ")
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/"), let status = Int(parts[1]) else {
            throw ProbeError.malformed("status line \"\(statusLine.prefix(60))\"")
        }
        self.status = status
        headers = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...]
                .trimmingCharacters(in: .whitespaces)
        }
    }

    /// The string value of a top-level field of a JSON object body.
    func field(_ name: String) -> String? {
        let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any]
        return object?[name] as? String
    }
}

/// Reads an HTTP/1.1 response from a `ProbeSocket` before a deadline.
struct HTTPReader {
    let socket: ProbeSocket
    let deadline: ContinuousClock.Instant
    /// Bytes received and not consumed yet.
    var buffer: [UInt8] = []
    private var scratch = [UInt8](repeating: 0, count: 64 << 10)

    init(socket: ProbeSocket, deadline: ContinuousClock.Instant) {
        self.socket = socket
        self.deadline = deadline
    }

    /// The response head; the body's first bytes stay in `buffer`.
    mutating func head() throws -> HTTPAnswer {
        var searchFrom = 0
        while true {
            if let end = HTTPReader.find([13, 10, 13, 10], in: buffer, from: searchFrom) {
                let answer = try HTTPAnswer(head: String(decoding: buffer[..<end], as: UTF8.self))
                buffer.removeFirst(end + 4)
                return answer
            }
            searchFrom = max(0, buffer.count - 3)
            guard try receive() else {
                throw ProbeError.closed(
                    buffer.isEmpty
                        ? "the daemon closed the connection without answering"
                        : "the daemon closed the connection in the middle of the response head")
            }
        }
    }

    /// The rest of the body: by `Content-Length`, chunked, or up to the close.
    mutating func wholeBody(of answer: HTTPAnswer) throws -> [UInt8] {
        if answer.headers["transfer-encoding"]?.lowercased() == "chunked" {
            var decoder = ChunkedBody()
            var body = try decoder.decode(&buffer)
            while !decoder.finished {
                guard try receive() else { throw ProbeError.closed("the daemon closed a chunked body early") }
                body += try decoder.decode(&buffer)
            }
            return body
        }
        if let length = answer.headers["content-length"].flatMap(Int.init) {
            while buffer.count < length {
                guard try receive() else { throw ProbeError.closed("the daemon closed the body early") }
            }
            return Array(buffer.prefix(length))
        }
        while try receive() {}
        return buffer
    }

    /// Appends what arrives next; false at the end of the stream.
    mutating func receive() throws -> Bool {
        while true {
            switch socket.receive(into: &scratch) {
            case .moved(let count):
                buffer += scratch[..<count]
                return true
            case .ended: return false
            case .failed(let code): throw ProbeError.system("receive", code)
            case .wouldBlock:
                guard socket.wait(for: Int16(POLLIN), until: deadline) != 0 else {
                    throw ProbeError.timedOut("no answer from the daemon in time")
                }
            }
        }
    }

    /// The first index of `marker` in `bytes` at or after `start`.
    static func find(_ marker: [UInt8], in bytes: [UInt8], from start: Int) -> Int? {
        guard bytes.count >= marker.count, start <= bytes.count - marker.count else { return nil }
        for index in start...(bytes.count - marker.count)
        where bytes[index] == marker[0] && bytes[index..<(index + marker.count)].elementsEqual(marker) {
            return index
        }
        return nil
    }
}
