import Foundation
import Replica

/// `/events`: the seed's thin-client protocol (docs/relay.md). `POST` takes
/// a batch of a client's events, `GET` serves the log as a client that
/// knows only the Item domain can decode it.
extension DaemonAPI {
    /// `POST /events` with a JSON array of events → `200` with the stored
    /// events, one per input in input order; `422` naming the first event
    /// that does not fit, `403` the first in a scope the device (or this
    /// replica's certificate) may not write, and nothing stored.
    func pushThinClientEvents(_ request: HTTPRequest, device: DeviceTokens.Device?) throws -> HTTPResponse {
        guard case .array(let items) = try Self.jsonBody(request) else {
            throw APIError.badRequest("the body must be a JSON array of events")
        }
        let batch = try items.enumerated().map { index, item in
            do {
                return try Self.thinClientEvent(item)
            } catch let reason as ThinClientBatchError {
                throw APIError(422, "invalid_event", "event \(index): \(reason.reason)", index: index)
            }
        }
        for (index, event) in batch.enumerated() {
            if let device, !device.mayWrite(event.scope) {
                throw APIError(
                    403, "scope_not_writable",
                    "event \(index): thin client \(device.name) may not write scope \(event.scope)", index: index)
            }
            try requireWritable(event.scope, event: index)
        }
        let stored = try storage.write { try $0.acceptThinClientEvents(batch) }
        return .json(200, "[" + stored.map(EventJSON.line(for:)).joined(separator: ",") + "]")
    }

    /// `GET /events?after=OFFSET&limit=N&types=T1,T2&from=checkpoint` → `{"events":[…],"next_offset":X}`
    /// (item events only, as the seed's client takes them, unless `types` names others):
    /// `X` is the offset of the page's last event, null only on an empty page.
    /// A device whose read scopes are limited gets only events of those
    /// scopes; `X` is then the last offset looked at, so a page may hold
    /// fewer than N events (even none) before the end.
    func thinClientPage(_ request: HTTPRequest, device: DeviceTokens.Device?) throws -> HTTPResponse {
        let after = try Self.count(request, "after", default: 0)
        let limit = try Self.count(request, "limit", default: 1_000)
        guard limit <= Self.maxPageSize else {
            throw APIError.badRequest("limit must be between 0 and \(Self.maxPageSize)")
        }
        var types: Set<String> = [Item.entityType]
        if let named = request.query["types"] {
            types = Set(named.split(separator: ",").map(String.init))
            guard !types.isEmpty else { throw APIError.badRequest("?types= must name entity types, comma-separated") }
        }
        let fromCheckpoint: Bool
        switch request.query["from"] {
        case nil: fromCheckpoint = false
        case "checkpoint": fromCheckpoint = true
        case let other?: throw APIError.badRequest("?from= takes only \"checkpoint\", not \"\(other)\"")
        }
        // A relay on a shared store first mirrors what the others committed, so a phone that moved here
        // from one of them finds every offset it saw there (docs/relay.md); unreachable, it serves what it holds.
        try? storage.catchUpSharedStore()
        let page = try reads.read {
            try $0.thinClientEvents(after: after, limit: Int(limit), types: types, fromCheckpoint: fromCheckpoint)
        }
        let next = page.last.map { String($0.offset) } ?? "null"
        let shown = device.map { device in page.filter { device.mayRead($0.event.feed.scope) } } ?? page
        return .json(
            200, "{\"events\":[" + shown.map(EventJSON.line(for:)).joined(separator: ",") + "],\"next_offset\":\(next)}"
        )
    }

    /// One pushed event in the seed's `AppendEvent` shape. `entity_type`
    /// defaults to `item`, `scope` to `default`; `replica_write_offset`,
    /// `server_offset` and `server_time_ms` are the client's and ignored
    /// (null or absent, or a whole number).
    private static func thinClientEvent(_ item: JSONValue) throws -> ThinClientEvent {
        func refuse(_ reason: String) -> ThinClientBatchError { ThinClientBatchError(index: 0, reason: reason) }
        guard case .object(let fields) = item else { throw refuse("an event must be a JSON object") }
        func string(_ key: String, default value: String? = nil) throws -> String {
            switch fields[key] {
            case .string(let text)?: return text
            case nil, .null?:
                guard let value else { throw refuse("missing field \"\(key)\"") }
                return value
            default: throw refuse("\"\(key)\" must be a string")
            }
        }
        for key in ["replica_write_offset", "server_offset", "server_time_ms"] {
            switch fields[key] {
            case nil, .null?, .int?: continue
            default: throw refuse("\"\(key)\" must be a whole number or null")
            }
        }
        let idText = try string("replica_event_id")
        guard let eventID = UUID(uuidString: idText) else {
            throw refuse("replica_event_id \"\(idText)\" is not a UUID")
        }
        let entityType = try string("entity_type", default: Item.entityType)
        let entityID = try string("entity_id")
        if entityType == Item.entityType, UUID(uuidString: entityID) == nil {
            throw refuse("entity_id \"\(entityID)\" of an item is not a UUID")
        }
        guard case .int(let timeMs)? = fields["replica_time_ms"] else {
            throw refuse(
                fields["replica_time_ms"] == nil
                    ? "missing field \"replica_time_ms\"" : "\"replica_time_ms\" must be a whole number")
        }
        guard let payload = fields["payload"] else { throw refuse("missing field \"payload\"") }
        return ThinClientEvent(
            eventID: eventID, clientReplicaID: try string("replica_id"), scope: try string("scope", default: "default"),
            timeMs: timeMs, entityType: entityType, entityID: entityID, payload: payload.canonicalText)
    }
}
