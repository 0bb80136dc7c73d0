import Foundation
import Gossip
import Replica
import SharedStore
import SyncProtocol

/// The daemon's HTTP API (docs/http-api.md): routes each request to its
/// handler, checks the bearer token, and answers 503 once shutdown began.
/// Reads use their own database connection (`ReadReplica`); writes go
/// through the sync service, which pushes them to peers at once.
///
/// `@unchecked Sendable`: `stopping` is only touched with `lock` held; the rest
/// are constants of `Sendable` types.
final class DaemonAPI: @unchecked Sendable {
    struct Settings: Sendable {
        /// As `GET /status` shows it.
        var role = NodeRole.peer
        /// This replica's identity, as `GET /status` shows it.
        var identity: IdentityReport
        /// This replica's certificate: local writes must stay within its write scopes.
        var certificate: Certificate?
        /// `--topology`, as `GET /peers` shows it.
        var topologyMode = TopologyMode.auto
        /// When set, every request needs `Authorization: Bearer <token>`
        /// (or a device token, which only reaches the thin-client protocol).
        var token: String?
        /// The thin-client device tokens (`peerd thin-client add`): each
        /// may call `POST /events` and `GET /events`, nothing else.
        var deviceTokens: DeviceTokens.Watched?
        var doubleTapWindowMs: Int64 = 300
        /// The peer connection cap in effect, as `GET /status` shows it (`sync.max_connections`).
        var maxConnections = 64
        /// How long a quiet change stream waits before a keepalive comment.
        var keepaliveSeconds: TimeInterval = 15
        /// A relay's shared store (`--store`): its listener tells whether it is reachable.
        var sharedStore: StoreListener?
    }

    let service: GossipService
    let storage: StorageExecutor
    let reads: ReadReplica
    let changes: ChangeSignal
    let settings: Settings
    let metrics: DaemonMetrics
    let doubleTaps: DoubleTapFilter
    let claims: ClaimDesk
    private let log: @Sendable (LogRecord) -> Void
    private let lock = NSLock()
    private var stopping = false

    init(
        service: GossipService, storage: StorageExecutor, reads: ReadReplica, changes: ChangeSignal,
        settings: Settings, metrics: DaemonMetrics, log: @escaping @Sendable (LogRecord) -> Void
    ) {
        self.log = log
        self.claims = ClaimDesk(
            storage: storage, reads: reads, changes: changes, isRelay: settings.role == .relay,
            relaysConnected: { service.connectedRelays() })
        self.service = service
        self.storage = storage
        self.reads = reads
        self.changes = changes
        self.settings = settings
        self.metrics = metrics
        self.doubleTaps = DoubleTapFilter(windowMs: settings.doubleTapWindowMs)
    }

    /// From now on every request gets 503 and the change streams end.
    func beginShutdown() {
        lock.withLock { stopping = true }
        changes.close()
    }

    var isStopping: Bool { lock.withLock { stopping } }

    func handle(_ request: HTTPRequest) -> HTTPResponse {
        let response: HTTPResponse
        do {
            response = try route(request)
        } catch {
            response = APIError.from(error).response
        }
        metrics.countRequest(status: response.status)
        // Every request at debug level; a failure of the daemon's own at error level.
        let fields = [("method", request.method), ("path", request.path), ("status", "\(response.status)")]
        // A degraded `/health` (503, no error body) says what the log said once already.
        if response.status >= 500, case let message = Self.message(of: response), !message.isEmpty {
            log(LogRecord(.error, .httpRequestFailed, "http request failed", fields + [("error", message)]))
        } else {
            log(LogRecord(.debug, .httpRequest, "http request", fields))
        }
        return response
    }

    private func route(_ request: HTTPRequest) throws -> HTTPResponse {
        let device: DeviceTokens.Device?
        switch admission(of: request) {
        case .refused(let response): return response
        case .admitted(let caller): device = caller
        }
        if isStopping { return APIError(503, "shutting_down", "the daemon is shutting down").response }
        let segments = request.segments
        func allow(_ methods: String...) throws {
            guard methods.contains(request.method) else {
                throw APIError(
                    405, "method_not_allowed",
                    "\(request.method) is not allowed on \(request.path); allowed: \(methods.joined(separator: ", "))")
            }
        }
        switch segments.first {
        case "health" where segments.count == 1:
            try allow("GET")
            return health()
        case "items" where segments.count == 1:
            try allow("GET", "POST")
            return request.method == "GET" ? try listItems(request) : try createItem(request)
        case "items" where segments.count == 2:
            try allow("GET")
            return try item(id: segments[1])
        case "items" where segments.count == 3 && segments[2] == "events":
            try allow("POST")
            return try appendItemEvent(id: segments[1], request)
        case "items" where segments.count == 3 && segments[2] == "undo":
            try allow("POST")
            return try undoItem(id: segments[1], request)
        case "entities" where segments.count >= 2:
            return try entityRoute(request, segments)
        case "domains" where segments.count == 1:
            try allow("GET", "POST")
            return request.method == "GET" ? try listDomains() : try declareDomain(request)
        case "domains" where segments.count == 2:
            try allow("GET")
            return try domain(segments[1])
        case "events" where segments.count == 1:
            try allow("GET", "POST")
            return request.method == "GET"
                ? try thinClientPage(request, device: device) : try pushThinClientEvents(request, device: device)
        case "log" where segments.count == 1:
            try allow("GET")
            return try logPage(request)
        case "events" where segments.count == 2 && segments[1] == "all":
            try allow("GET")
            return allEvents()
        case "changes" where segments.count == 1:
            try allow("GET")
            return try changeStream(request)
        case "status" where segments.count == 1:
            try allow("GET")
            return try status()
        case "peers" where segments.count == 1:
            try allow("GET")
            return peers()
        case "revocations" where segments.count == 1:
            try allow("POST")
            return try revoke(request)
        case "retired" where segments.count == 1:
            try allow("POST")
            return try retire(request)
        case "checkpoints" where segments.count == 1:
            try allow("POST")
            return try giveCheckpoint(request)
        case "metrics" where segments.count == 1:
            try allow("GET")
            return try metricsText()
        default:
            throw APIError.notFound("no such resource: \(request.path)")
        }
    }

    private static func message(of response: HTTPResponse) -> String {
        guard case .bytes(let bytes) = response.body else { return "" }
        return (try? JSONValue.parse(String(decoding: bytes, as: UTF8.self)))?["error"]?["message"]?.stringValue ?? ""
    }

    /// Whether a request may go on, and for a thin client's the device it
    /// comes from, whose scopes limit what `/events` pulls and pushes.
    private enum Admission {
        /// `device` is nil for the operator (or anyone, without a token).
        case admitted(device: DeviceTokens.Device?)
        case refused(HTTPResponse)
    }

    /// The operator's token (when one is set) reaches everything; a device's
    /// token only the thin-client protocol (403 elsewhere); any other request
    /// gets 401 when a token is set.
    private func admission(of request: HTTPRequest) -> Admission {
        let authorization = request.headers["authorization"]
        if let token = settings.token, Self.authorized(authorization, token: token) { return .admitted(device: nil) }
        if let device = device(authorization) {
            let thinClientProtocol =
                request.segments == ["events"] && (request.method == "GET" || request.method == "POST")
            let sessionRead =
                request.method == "GET" && request.segments.count == 4 && request.segments[0] == "entities"
                && ["session", "dropped"].contains(request.segments[3])
            guard thinClientProtocol || sessionRead else {
                return .refused(
                    APIError(
                        403, "forbidden",
                        "the device token of \(device.name) may only call POST /events and GET /events (the "
                            + "thin-client protocol) and read sessions (GET /entities/{type}/{id}/session and …/dropped)"
                    ).response)
            }
            return .admitted(device: device)
        }
        guard settings.token == nil else {
            var response = APIError(401, "unauthorized", "send the daemon's token as `Authorization: Bearer …`")
                .response
            response.headers.append(("WWW-Authenticate", "Bearer"))
            return .refused(response)
        }
        return .admitted(device: nil)
    }

    /// The device a thin-client token in `header` was issued to, if any.
    private func device(_ header: String?) -> DeviceTokens.Device? {
        guard let devices = settings.deviceTokens, let header, header.hasPrefix("Bearer ") else { return nil }
        return devices.device(withToken: String(header.dropFirst("Bearer ".count)))
    }

    /// Compares in constant time, so the token cannot be guessed byte by byte.
    private static func authorized(_ header: String?, token: String) -> Bool {
        guard let header, header.hasPrefix("Bearer ") else { return false }
        let offered = Array(header.dropFirst("Bearer ".count).utf8)
        let expected = Array(token.utf8)
        var difference = UInt8(offered.count == expected.count ? 0 : 1)
        for index in 0..<expected.count { difference |= expected[index] ^ (index < offered.count ? offered[index] : 0) }
        return difference == 0
    }

    /// A query argument as a whole number ≥ 0.
    static func count(_ request: HTTPRequest, _ name: String, default value: Int64) throws -> Int64 {
        guard let text = request.query[name] else { return value }
        guard let number = Int64(text), number >= 0 else {
            throw APIError.badRequest("\(name) must be a whole number of 0 or more, not \"\(text)\"")
        }
        return number
    }

    /// The request body as a JSON object; a body that is not UTF-8 is
    /// refused rather than stored with its bad bytes replaced.
    static func jsonObject(_ request: HTTPRequest) throws -> JSONValue {
        let value = try jsonBody(request)
        guard case .object = value else { throw APIError.badRequest("the body must be a JSON object") }
        return value
    }

    /// The request body as JSON of any kind, refused as `jsonObject` says.
    static func jsonBody(_ request: HTTPRequest) throws -> JSONValue {
        guard let text = String(validating: request.body, as: UTF8.self) else {
            throw APIError.badRequest("the body is not valid UTF-8 (byte \(invalidUTF8Offset(request.body)))")
        }
        do {
            return try JSONValue.parse(text)
        } catch {
            throw APIError.badRequest("the body is not valid JSON: \(error)")
        }
    }

    /// The offset of the first byte that does not belong to valid UTF-8.
    private static func invalidUTF8Offset(_ bytes: [UInt8]) -> Int {
        var decoder = UTF8()
        var iterator = bytes.makeIterator()
        var offset = 0
        while true {
            switch decoder.decode(&iterator) {
            case .scalarValue(let scalar): offset += UTF8.width(scalar)
            case .emptyInput, .error: return offset
            }
        }
    }
}
