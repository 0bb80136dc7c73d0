import Foundation

/// The JSON shape of an event in export files and the HTTP API, with the
/// field names of the thin-client sync protocol (see docs/events.md).
///
/// ```json
/// {"replica_event_id":"…","replica_id":"r1","scope":"default","replica_write_offset":3,
///  "replica_time_ms":1700000000000,"entity_type":"item","entity_id":"i1",
///  "payload":{"type":"Renamed","name":"Nuts"},"server_offset":17,"server_time_ms":1700000000123}
/// ```
public enum EventJSON {
    /// One JSON object on one line. `offset` and `arrivalTimeMs` become
    /// `server_offset` and `server_time_ms` (null when absent).
    public static func line(for event: Event, offset: Int64?, arrivalTimeMs: Int64?) -> String {
        var text = #"{"replica_event_id":""# + event.eventID.lowercased + "\""
        text += #","replica_id":"# + quoted(event.feed.replicaID)
        text += #","scope":"# + quoted(event.feed.scope)
        text += #","replica_write_offset":"# + String(event.seq)
        text += #","replica_time_ms":"# + String(event.timeMs)
        text += #","entity_type":"# + quoted(event.entityType)
        text += #","entity_id":"# + quoted(event.entityID)
        text += #","payload":"# + event.payload
        text += #","server_offset":"# + (offset.map(String.init) ?? "null")
        text += #","server_time_ms":"# + (arrivalTimeMs.map(String.init) ?? "null")
        return text + "}"
    }

    /// The line for a stored event, with this node's offset and arrival time.
    public static func line(for stored: StoredEvent) -> String {
        line(for: stored.event, offset: stored.offset, arrivalTimeMs: stored.arrivalTimeMs)
    }

    /// Parses one line. `server_offset` and `server_time_ms` are ignored:
    /// they belong to the node that wrote the line. Without `scope` the
    /// event is in `default`, without `entity_type` it is an item (the
    /// seed's shape has neither).
    public static func event(fromLine line: String) throws -> Event {
        let object: [String: JSONValue]
        do {
            guard case .object(let members) = try JSONValue.parse(line) else {
                throw EventJSONError(reason: "a line must be a JSON object")
            }
            object = members
        } catch let error as JSONParser.Failure {
            throw EventJSONError(reason: "not JSON: \(error)")
        }
        func string(_ key: String) throws -> String {
            guard let value = object[key] else { throw EventJSONError(reason: "missing field \"\(key)\"") }
            guard case .string(let text) = value else { throw EventJSONError(reason: "\"\(key)\" must be a string") }
            return text
        }
        func integer(_ key: String) throws -> Int64 {
            guard let value = object[key] else { throw EventJSONError(reason: "missing field \"\(key)\"") }
            guard case .int(let number) = value else { throw EventJSONError(reason: "\"\(key)\" must be an integer") }
            return number
        }
        let idText = try string("replica_event_id")
        guard let eventID = UUID(uuidString: idText) else {
            throw EventJSONError(reason: "replica_event_id \"\(idText)\" is not a UUID")
        }
        let seq = try integer("replica_write_offset")
        guard seq >= 1 else { throw EventJSONError(reason: "replica_write_offset must be 1 or more") }
        guard let payload = object["payload"] else { throw EventJSONError(reason: "missing field \"payload\"") }
        guard case .object = payload else { throw EventJSONError(reason: "payload must be a JSON object") }
        let scope = object["scope"] == nil || object["scope"] == .null ? FeedID.defaultScope : try string("scope")
        // The seed's events carry no entity type: they are items.
        let entityType =
            object["entity_type"] == nil || object["entity_type"] == .null ? Item.entityType : try string("entity_type")
        return Event(
            eventID: eventID, feed: FeedID(replicaID: try string("replica_id"), scope: scope), seq: UInt64(seq),
            timeMs: try integer("replica_time_ms"), entityType: entityType,
            entityID: try string("entity_id"), payload: payload.canonicalText)
    }

    /// A JSON string literal for `text`.
    public static func quoted(_ text: String) -> String {
        var result = ""
        appendQuoted(text, to: &result)
        return result
    }

    /// Appends the JSON string literal for `text` to `output`.
    static func appendQuoted(_ text: String, to output: inout String) {
        // Most ids, names and notes need no escape: copy them whole.
        if !needsEscape(text) {
            output += "\""
            output += text
            output += "\""
            return
        }
        output += "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": output += "\\\""
            case "\\": output += "\\\\"
            case "\n": output += "\\n"
            case "\r": output += "\\r"
            case "\t": output += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                output += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: output.unicodeScalars.append(scalar)
            }
        }
        output += "\""
    }

    /// True when `text` has a quote, a backslash or a control character.
    static func needsEscape(_ text: String) -> Bool {
        func escaped(_ byte: UInt8) -> Bool { byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") }
        // A loop over contiguous bytes: `utf8.contains(where:)` was a visible cost of every fold.
        return text.utf8.withContiguousStorageIfAvailable { $0.contains(where: escaped) }
            ?? text.utf8.contains(where: escaped)
    }
}

/// A line that is not an event in the documented JSON shape.
public struct EventJSONError: Error, CustomStringConvertible, Sendable {
    public var reason: String
    public var description: String { reason }
}
