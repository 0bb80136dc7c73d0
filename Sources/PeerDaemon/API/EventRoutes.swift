import Foundation
import Replica

/// `/log`, `/events/all` and `/changes`: the raw log by local arrival offset
/// (`/events` itself is the thin-client protocol, `ThinClientRoutes.swift`).
extension DaemonAPI {
    static let maxPageSize: Int64 = 10_000

    /// `GET /log?after=OFFSET&limit=N` → `{"events":[…],"next_offset":N|null}`:
    /// every event, payloads as stored; `next_offset` is null on the last page.
    func logPage(_ request: HTTPRequest) throws -> HTTPResponse {
        let after = try Self.count(request, "after", default: 0)
        let limit = try Self.count(request, "limit", default: 1_000)
        guard (1...Self.maxPageSize).contains(limit) else {
            throw APIError.badRequest("limit must be between 1 and \(Self.maxPageSize)")
        }
        var page = try reads.read { try $0.events(after: after, limit: Int(limit) + 1) }
        let more = page.count > limit
        if more { page.removeLast() }
        let next = more ? page.last.map { String($0.offset) } ?? "null" : "null"
        return .json(
            200, "{\"events\":[" + page.map(EventJSON.line(for:)).joined(separator: ",") + "],\"next_offset\":\(next)}")
    }

    /// `GET /events/all`: the same shape with every event, streamed page by
    /// page so memory stays flat however large the log is.
    func allEvents() -> HTTPResponse {
        HTTPResponse(
            status: 200, headers: [("Content-Type", "application/json")],
            body: .stream(EventArrayStream(reads: reads)))
    }

    /// `GET /changes?after=OFFSET&types=T1,T2` (or `Last-Event-ID`): Server-Sent Events,
    /// one per stored event (of those entity types) with the entity's projection, from `after`
    /// (default: the newest event, so only new ones) until the client leaves.
    func changeStream(_ request: HTTPRequest) throws -> HTTPResponse {
        let after: Int64
        if request.query["after"] != nil {
            after = try Self.count(request, "after", default: 0)
        } else if let lastID = request.headers["last-event-id"] {
            guard let offset = Int64(lastID), offset >= 0 else {
                throw APIError.badRequest("Last-Event-ID must be an event offset, not \"\(lastID)\"")
            }
            after = offset
        } else {
            after = try reads.read { try $0.lastOffset() }
        }
        let types = request.query["types"].map { Set($0.split(separator: ",").map(String.init)) }
        if let types, types.isEmpty { throw APIError.badRequest("?types= must name entity types, comma-separated") }
        let stream = ChangeStream(
            reads: reads, changes: changes, after: after, keepaliveSeconds: settings.keepaliveSeconds, types: types)
        return HTTPResponse(
            status: 200,
            headers: [
                ("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache"), ("X-Accel-Buffering", "no"),
            ],
            body: .stream(stream))
    }
}

/// The body of `/events/all`: `{"events":[`, every event, `],"next_offset":null}`.
/// A failed read, or the server closing it before the end, fails the
/// stream, so the body ends without its final chunk and no client takes
/// the events so far for the whole log.
///
/// `@unchecked Sendable`: its state is only touched with `lock` held.
final class EventArrayStream: ResponseStream, @unchecked Sendable {
    private let reads: ReadReplica
    private let lock = NSLock()
    private var pending = PendingBytes()
    private var offset: Int64 = 0
    private var first = true
    private var finished = false
    private var closed = false

    init(reads: ReadReplica) {
        self.reads = reads
        pending.append("{\"events\":[")
    }

    func next(maximum: Int) -> StreamChunk {
        lock.withLock {
            while pending.isEmpty {
                if finished { return .end }
                if closed { return .failed("the daemon is shutting down; events after offset \(offset) were not sent") }
                let page: [StoredEvent]
                do {
                    page = try reads.read { try $0.events(after: offset, limit: 1_000) }
                } catch {
                    return .failed("reading the events after offset \(offset) failed: \(error)")
                }
                guard let last = page.last else {
                    pending.append("],\"next_offset\":null}\n")
                    finished = true
                    continue
                }
                offset = last.offset
                pending.append((first ? "" : ",") + page.map(EventJSON.line(for:)).joined(separator: ","))
                first = false
            }
            return .bytes(pending.take(maximum))
        }
    }

    func close() {
        lock.withLock { closed = true }
    }
}
