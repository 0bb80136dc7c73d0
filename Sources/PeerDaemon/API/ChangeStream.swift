import Foundation
import Replica

/// The body of `GET /changes`: one Server-Sent Event per stored event,
///
/// ```
/// id: 42
/// event: event
/// data: {"event":{…event JSON…},"projection":{…item…}}
/// ```
///
/// and after a claim that took an entity from this replica, an
/// `event: taken_over` with the new holder and how many of this replica's
/// events were not applied; then `.later` until the next store: `ChangeSignal` wakes the stream,
/// and the server's tick pulls it every second, so it also finds events
/// another process wrote. Each pull with nothing pending reads the log
/// once. A comment line every `keepaliveSeconds` keeps
/// quiet connections open. The `id` is the event's local offset, so a
/// client resumes with `?after=` or `Last-Event-ID`. The projection is the
/// entity's state when the event is sent (null for entity types this node
/// does not fold); `types` keeps only events of those entity types. A failed read ends the body without its final chunk.
///
/// `@unchecked Sendable`: its state is only touched with `lock` held; the
/// server never pulls it twice at once, so a read runs without the lock.
final class ChangeStream: ResponseStream, @unchecked Sendable {
    private let reads: ReadReplica
    private let changes: ChangeSignal
    private let keepalive: Duration
    private let lock = NSLock()
    private var offset: Int64
    private var pending = PendingBytes()
    private var closed = false
    private var lastSent: ContinuousClock.Instant
    private var subscription: Int?
    /// Only events of these entity types (`?types=`); nil: every event.
    private let types: Set<String>?

    init(
        reads: ReadReplica, changes: ChangeSignal, after offset: Int64, keepaliveSeconds: TimeInterval,
        types: Set<String>? = nil
    ) {
        self.types = types
        self.reads = reads
        self.changes = changes
        self.offset = offset
        keepalive = .seconds(keepaliveSeconds)
        lastSent = .now
        // Sent at once, so the client sees the stream open before any event.
        pending.append(": peersync change stream after offset \(offset)\n\n")
    }

    func attach(wake: @escaping @Sendable () -> Void) {
        let token = changes.subscribe(wake)
        let unneeded = lock.withLock {
            if closed { return true }
            subscription = token
            return false
        }
        if unneeded { changes.unsubscribe(token) }
    }

    func next(maximum: Int) -> StreamChunk {
        let look: Int64? = lock.withLock { pending.isEmpty && !closed ? offset : nil }
        if let from = look, !changes.isClosed {
            let rendered: (text: String, last: Int64)?
            do {
                rendered = try reads.read { log in try render(log, after: from) }
            } catch {
                return .failed("reading the change stream after offset \(from) failed: \(error)")
            }
            if let rendered {
                lock.withLock {
                    pending.append(rendered.text)
                    offset = rendered.last
                }
            }
        }
        return lock.withLock {
            let ending = closed || changes.isClosed
            if pending.isEmpty && !ending && ContinuousClock.now - lastSent >= keepalive {
                pending.append(": keepalive\n\n")
            }
            if !pending.isEmpty {
                lastSent = .now
                return .bytes(pending.take(maximum))
            }
            return ending ? .end : .later
        }
    }

    func close() {
        let token = lock.withLock {
            closed = true
            defer { subscription = nil }
            return subscription
        }
        if let token { changes.unsubscribe(token) }
    }

    /// The events after `offset` as SSE text and the last one's offset, or
    /// nil when there are none.
    private func render(_ log: EventLog, after offset: Int64) throws -> (text: String, last: Int64)? {
        let page = try log.events(after: offset, limit: 500)
        guard let last = page.last else { return nil }
        var text = ""
        for stored in page {
            let event = stored.event
            if let types, !types.contains(event.entityType) { continue }
            let projection = try log.state(entityType: event.entityType, entityID: event.entityID) ?? "null"
            text += "id: \(stored.offset)\nevent: event\ndata: {\"event\":\(EventJSON.line(for: stored)),"
            text += "\"projection\":\(projection)}\n\n"
            if let takeover = try takeover(of: log.replicaID, by: event, in: log) {
                text += "id: \(stored.offset)\nevent: taken_over\ndata: \(takeover)\n\n"
            }
        }
        return (text, last.offset)
    }

    /// When `event` is a claim that took an entity from `replica`: the
    /// `taken_over` data (docs/http-api.md, "GET /changes").
    private func takeover(of replica: String, by event: Event, in log: EventLog) throws -> String? {
        switch SessionEvent.parse(event.payload) {
        case .claimed, .claimGranted: break
        default: return nil
        }
        let session = try log.session(entityType: event.entityType, entityID: event.entityID)
        guard let claim = session.claims.first(where: { $0.event.eventID == event.eventID }),
            claim.tookOver(from: replica)
        else { return nil }
        let data: JSONValue = .object([
            "entity_type": .string(event.entityType), "entity_id": .string(event.entityID),
            "holder": .string(claim.claimant), "previous_holder": .string(replica),
            "claim": .string(event.eventID.uuidString.lowercased()),
            "dropped_own": .int(Int64(session.droppedCount(of: replica))),
        ])
        return data.canonicalText
    }
}
