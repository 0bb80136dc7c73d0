import PeerNet

/// Where a `peerd` HTTP API listens, and the bearer token it wants, if any.
///
/// ```swift
/// let api = DaemonEndpoint(host: "127.0.0.1", port: 4000)
/// let reply = try api.request("GET", "/status")
/// ```
public struct DaemonEndpoint: Sendable, Hashable {
    public var host: String
    public var port: UInt16
    public var token: String?

    public init(host: String, port: UInt16, token: String? = nil) {
        self.host = host
        self.port = port
        self.token = token
    }

    /// Sends one request (`Connection: close`) and reads the whole reply.
    /// Throws `DaemonClientError` when the daemon cannot be reached or the
    /// reply is cut off (a streamed response that failed midway ends
    /// without its final chunk).
    public func request(
        _ method: String, _ path: String, body: String? = nil, headers: [(String, String)] = [],
        timeoutMs: Int = 30_000
    ) throws -> HTTPReply {
        try request(method, path, bytes: body.map { Array($0.utf8) }, headers: headers, timeoutMs: timeoutMs)
    }

    /// The same with a body of any bytes, sent as they are (`Content-Type:
    /// application/json` when there is one), e.g. to see what the daemon
    /// answers a body that is not UTF-8.
    ///
    /// ```swift
    /// let reply = try api.request("POST", "/items", bytes: Array(#"{"name":""#.utf8) + [0xFF, 0xFE] + Array(#""}"#.utf8))
    /// ```
    public func request(
        _ method: String, _ path: String, bytes body: [UInt8]?, headers: [(String, String)] = [],
        timeoutMs: Int = 30_000
    ) throws -> HTTPReply {
        var reader = try open(method, path, body: body, headers: headers, timeoutMs: timeoutMs)
        let head = try reader.head()
        var body: [UInt8] = []
        while let chunk = try reader.bodyChunk(head) { body += chunk }
        return HTTPReply(status: head.status, headers: head.headers, body: body)
    }

    /// Opens the change stream (`GET path`, Server-Sent Events).
    public func events(_ path: String, headers: [(String, String)] = []) throws -> EventStream {
        let reader = try open(
            "GET", path, body: nil, headers: headers + [("Accept", "text/event-stream")], timeoutMs: 0)
        return try EventStream(reader: reader)
    }

    /// Connects and sends the request. A daemon may answer before the body
    /// is all sent (413 for one over its limit) and close: then sending
    /// fails, and the reply, if one came, is what counts.
    private func open(
        _ method: String, _ path: String, body: [UInt8]?, headers: [(String, String)], timeoutMs: Int
    ) throws -> ResponseReader {
        let socket = try connect(timeoutMs: timeoutMs)
        var head = "\(method) \(path) HTTP/1.1\r\nHost: \(host):\(port)\r\nConnection: close\r\n"
        if let token { head += "Authorization: Bearer \(token)\r\n" }
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        let bytes = body ?? []
        if body != nil { head += "Content-Type: application/json\r\n" }
        head += "Content-Length: \(bytes.count)\r\n\r\n"
        var reader = ResponseReader(socket: socket)
        do {
            try socket.send(Array(head.utf8) + bytes)
        } catch {
            guard reader.hasReply() else {
                throw DaemonClientError("sending the request to the daemon failed: \(error)")
            }
        }
        return reader
    }

    private func connect(timeoutMs: Int) throws -> Socket {
        let socket: Socket
        do {
            socket = try Socket.connect(host: host, port: port)
        } catch {
            throw DaemonClientError("cannot reach the daemon's HTTP API at \(host):\(port): \(error)")
        }
        socket.setReceiveTimeout(milliseconds: timeoutMs)
        return socket
    }
}
