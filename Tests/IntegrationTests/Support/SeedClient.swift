import Foundation
import Replica
import TestSupport

/// A thin client written from the seed's protocol (`client-sdk/src/sync.rs`,
/// `http.rs`, `event_log.rs`), over plain sockets, not `DaemonClient`: it
/// keeps its events in memory, numbers each store call's events from 1,
/// pushes those the server has not acknowledged, then pulls with one
/// integer cursor until an empty page, decoding every event as the seed's
/// `EventDescriptor<ItemEvent, ItemId>` would (one it cannot decode fails
/// the whole page).
final class SeedClient {
    /// One event as the seed's device log holds it.
    struct Descriptor: Equatable {
        var eventID: UUID
        var writeOffset: UInt64
        var timeMs: Int64
        var replicaID: String
        var serverOffset: Int64?
        var serverTimeMs: Int64?
        var entityID: UUID
        var payload: ItemEvent
    }

    /// What the seed's fold of an item gives: deletion is terminal.
    struct SeedItem: Equatable, CustomStringConvertible {
        var name = ""
        var quantity: Int64 = 0
        var note: String?
        var deleted = false
        var description: String { "\(name) ×\(quantity) note \(note ?? "-")\(deleted ? " (deleted)" : "")" }
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    let replicaID: String
    var port: UInt16
    var token: String?
    private(set) var entries: [Descriptor] = []
    private(set) var pulled: Int64?
    /// The device's clock: its events' `replica_time_ms` count on from here.
    var clockMs: Int64 = 1_700_000_000_000

    init(replicaID: String, port: UInt16, token: String? = nil) {
        self.replicaID = replicaID
        self.port = port
        self.token = token
    }

    /// `append_local`: one store call; its events get write offsets 1, 2, 3…
    @discardableResult
    func store(_ events: [(UUID, ItemEvent)]) -> [UUID] {
        events.enumerated().map { index, event in
            clockMs += 1
            let descriptor = Descriptor(
                eventID: UUID(), writeOffset: UInt64(index + 1), timeMs: clockMs, replicaID: replicaID,
                serverOffset: nil, serverTimeMs: nil, entityID: event.0, payload: event.1)
            entries.append(descriptor)
            return descriptor.eventID
        }
    }

    var unsynced: [Descriptor] { entries.filter { $0.serverOffset == nil && $0.replicaID == replicaID } }

    /// The body of `POST /events` for the unacknowledged events, at most `batch`.
    func pushBody(batch: Int) -> String {
        "[" + unsynced.prefix(batch).map(Self.appendEventJSON).joined(separator: ",") + "]"
    }

    /// `sync`: push in batches, then pull in pages of `batch`.
    func sync(batch: Int) throws {
        try push(batch: batch)
        try pull(batch: batch)
    }

    func push(batch: Int) throws {
        while !unsynced.isEmpty {
            let (status, body) = try request("POST", "/events", body: pushBody(batch: batch))
            guard status == 200 else { throw Failure(description: "push: \(status) \(body)") }
            try markSynced(body)
        }
    }

    /// `mark_synced`: stamps the server's offsets on the events by id.
    func markSynced(_ body: String) throws {
        guard case .array(let acknowledged) = try JSONValue.parse(body) else {
            throw Failure(description: "push answer is not an array: \(body)")
        }
        for ack in try acknowledged.map(Self.descriptor) {
            for index in entries.indices where entries[index].eventID == ack.eventID {
                entries[index].serverOffset = ack.serverOffset
                entries[index].serverTimeMs = ack.serverTimeMs
            }
        }
    }

    /// The seed's pull loop: stops only on an empty page; the cursor becomes `next_offset`.
    /// Returns how many pages it read.
    @discardableResult
    func pull(batch: Int) throws -> Int {
        var pages = 0
        while true {
            let page = try self.page(after: pulled, limit: batch)
            guard !page.events.isEmpty else { return pages }
            pages += 1
            for event in page.events where !entries.contains(where: { $0.eventID == event.eventID }) {
                entries.append(event)
            }
            pulled = page.next
            guard pages < 10_000 else { throw Failure(description: "the pull loop does not end") }
        }
    }

    /// One `GET /events` page, decoded as the seed decodes it.
    func page(after: Int64?, limit: Int) throws -> (events: [Descriptor], next: Int64?) {
        let query = "/events?limit=\(limit)" + (after.map { "&after=\($0)" } ?? "")
        let (status, body) = try request("GET", query)
        guard status == 200 else { throw Failure(description: "pull: \(status) \(body)") }
        let page = try JSONValue.parse(body)
        guard case .array(let events)? = page["events"] else { throw Failure(description: "no events: \(body)") }
        let next: Int64?
        switch page["next_offset"] {
        case .int(let offset)?: next = offset
        case .null?, nil: next = nil
        default: throw Failure(description: "next_offset is not an offset: \(body)")
        }
        return (try events.map(Self.descriptor), next)
    }

    /// Every item as the seed's client folds it: by `(replica_time_ms,
    /// replica_write_offset, replica_event_id)`, deletion terminal.
    var items: [UUID: SeedItem] {
        var result: [UUID: SeedItem] = [:]
        let ordered = entries.sorted {
            ($0.timeMs, $0.writeOffset) != ($1.timeMs, $1.writeOffset)
                ? ($0.timeMs, $0.writeOffset) < ($1.timeMs, $1.writeOffset)
                : $0.eventID.uuidString.lowercased() < $1.eventID.uuidString.lowercased()
        }
        for entry in ordered {
            var item = result[entry.entityID] ?? SeedItem()
            guard !item.deleted else { continue }
            switch entry.payload {
            case .created(let name, let quantity): (item.name, item.quantity) = (name, quantity)
            case .renamed(let name): item.name = name
            case .quantityChanged(let quantity): item.quantity = quantity
            case .noteChanged(let note): item.note = note
            case .deleted: item.deleted = true
            }
            result[entry.entityID] = item
        }
        return result
    }

    // MARK: HTTP over a plain socket

    /// Sends one request on a new connection and reads the answer until the
    /// daemon closes it (`Connection: close`). The client does not shut its
    /// side down first: a server may take that end of input for a client that left.
    func request(_ method: String, _ path: String, body: String? = nil) throws -> (status: Int, body: String) {
        let connection = try RawConnection(port: port)
        connection.send(Array(head(method, path, body: body).utf8))
        return try Self.parse(connection.receive(count: Int.max))
    }

    /// Sends a request and hangs up without reading the answer: a lost response.
    func sendAndHangUp(_ method: String, _ path: String, body: String, until stored: () throws -> Bool) throws {
        let connection = try RawConnection(port: port)
        connection.send(Array(head(method, path, body: body).utf8))
        guard try Poll.until(timeout: .seconds(30), stored) else {
            throw Failure(description: "the daemon did not store the batch whose answer was lost")
        }
        connection.hangUp()
    }

    private func head(_ method: String, _ path: String, body: String?) -> String {
        var text = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
        if let token { text += "Authorization: Bearer \(token)\r\n" }
        if let body { text += "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n" }
        return text + "\r\n" + (body ?? "")
    }

    private static func parse(_ bytes: [UInt8]) throws -> (status: Int, body: String) {
        let text = String(decoding: bytes, as: UTF8.self)
        guard let split = text.range(of: "\r\n\r\n") else { throw Failure(description: "no HTTP answer: \(text)") }
        let lines = text[..<split.lowerBound].components(separatedBy: "\r\n")
        let words = lines[0].split(separator: " ")
        guard words.count >= 2, let status = Int(words[1]) else {
            throw Failure(description: "bad status: \(lines[0])")
        }
        guard !lines.contains(where: { $0.lowercased().hasPrefix("transfer-encoding: chunked") }) else {
            throw Failure(description: "a chunked answer where a JSON body was expected")
        }
        return (status, String(text[split.upperBound...]))
    }

    // MARK: The seed's JSON

    private static func appendEventJSON(_ event: Descriptor) -> String {
        """
        {"replica_event_id":"\(event.eventID.uuidString.lowercased())","entity_id":"\(event.entityID.uuidString.lowercased())",\
        "payload":\(event.payload.payload),"replica_id":\(EventJSON.quoted(event.replicaID)),\
        "replica_time_ms":\(event.timeMs),"replica_write_offset":\(event.writeOffset),\
        "server_offset":null,"server_time_ms":null}
        """
    }

    /// Decodes an `EventDescriptor<ItemEvent, ItemId>` as serde would, or throws.
    static func descriptor(_ value: JSONValue) throws -> Descriptor {
        func fail(_ why: String) -> Failure {
            Failure(description: "undecodable event (\(why)): \(value.canonicalText)")
        }
        func uuid(_ key: String) throws -> UUID {
            guard case .string(let text)? = value[key], let id = UUID(uuidString: text) else { throw fail(key) }
            return id
        }
        func integer(_ key: String, optional: Bool = false) throws -> Int64? {
            switch value[key] {
            case .int(let number)?: return number
            case .null?,
                nil where optional:
                return nil
            default: throw fail(key)
            }
        }
        guard case .string(let replicaID)? = value["replica_id"] else { throw fail("replica_id") }
        guard let writeOffset = try integer("replica_write_offset"), writeOffset >= 0 else {
            throw fail("replica_write_offset")
        }
        return Descriptor(
            eventID: try uuid("replica_event_id"), writeOffset: UInt64(writeOffset),
            timeMs: try integer("replica_time_ms")!, replicaID: replicaID,
            serverOffset: try integer("server_offset", optional: true),
            serverTimeMs: try integer("server_time_ms", optional: true), entityID: try uuid("entity_id"),
            payload: try payload(value["payload"], fail: fail))
    }

    /// The seed's `#[serde(tag = "type")] enum ItemEvent`: exactly five variants.
    private static func payload(_ value: JSONValue?, fail: (String) -> Failure) throws -> ItemEvent {
        guard let value, case .string(let type)? = value["type"] else { throw fail("payload") }
        func string(_ key: String) throws -> String {
            guard case .string(let text)? = value[key] else { throw fail("payload.\(key)") }
            return text
        }
        func quantity() throws -> Int64 {
            guard case .int(let number)? = value["quantity"] else { throw fail("payload.quantity") }
            return number
        }
        switch type {
        case "Created": return .created(name: try string("name"), quantity: try quantity())
        case "Renamed": return .renamed(name: try string("name"))
        case "QuantityChanged": return .quantityChanged(quantity: try quantity())
        case "NoteChanged":
            switch value["note"] {
            case .string(let note)?: return .noteChanged(note: note)
            case .null?, nil: return .noteChanged(note: nil)
            default: throw fail("payload.note")
            }
        case "Deleted": return .deleted
        default: throw fail("payload type \(type)")
        }
    }
}
