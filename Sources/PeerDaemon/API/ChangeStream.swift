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
/// then it waits for the next store (woken by `ChangeSignal`, and looking
/// again every second for events another process wrote); a comment line every
/// `keepaliveSeconds` keeps quiet connections open. The `id` is the
/// event's local offset, so a client resumes with `?after=` or
/// `Last-Event-ID`. The projection is the entity's state when the event is
/// sent (null for entity types this node does not fold).
final class ChangeStream: ResponseStream, @unchecked Sendable {
    private let reads: ReadReplica
    private let changes: ChangeSignal
    private let keepaliveSeconds: TimeInterval
    private let lock = NSLock()
    private var offset: Int64
    private var pending = PendingBytes()
    private var closed = false
    private var lastSent = Date()

    init(reads: ReadReplica, changes: ChangeSignal, after offset: Int64, keepaliveSeconds: TimeInterval) {
        self.reads = reads
        self.changes = changes
        self.offset = offset
        self.keepaliveSeconds = keepaliveSeconds
        // Sent at once, so the client sees the stream open before any event.
        pending.append(": peersync change stream after offset \(offset)\n\n")
    }

    func next(maximum: Int) -> [UInt8]? {
        while true {
            if let bytes = lock.withLock({ pending.isEmpty ? nil : pending.take(maximum) }) {
                lastSent = Date()
                return bytes
            }
            if lock.withLock({ closed }) { return nil }
            let seen = changes.current
            let rendered: String?
            do {
                rendered = try reads.read { log in try render(log) }
            } catch {
                return nil
            }
            if let page = rendered {
                lock.withLock { pending.append(page) }
                continue
            }
            // Events written by another process raise no signal: look again every second.
            guard changes.wait(after: seen, timeout: 1) else { return nil }
            if Date().timeIntervalSince(lastSent) >= keepaliveSeconds {
                lock.withLock { pending.append(": keepalive\n\n") }
            }
        }
    }

    func close() {
        lock.withLock { closed = true }
    }

    /// The events after `offset` as SSE text, or nil when there are none.
    private func render(_ log: EventLog) throws -> String? {
        let page = try log.events(after: lock.withLock { offset }, limit: 500)
        guard let last = page.last else { return nil }
        var text = ""
        for stored in page {
            let event = stored.event
            let projection =
                event.entityType == Item.entityType
                ? try log.projection(Item.self, id: event.entityID).map { CanonicalJSON.text(of: $0) } ?? "null"
                : "null"
            text += "id: \(stored.offset)\nevent: event\ndata: {\"event\":\(EventJSON.line(for: stored)),"
            text += "\"projection\":\(projection)}\n\n"
        }
        lock.withLock { offset = last.offset }
        return text
    }
}
