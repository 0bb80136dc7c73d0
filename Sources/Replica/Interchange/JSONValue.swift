import Foundation

/// Any JSON value, for payloads whose shape only a domain knows.
public enum JSONValue: Hashable, Sendable, Codable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    public init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .int(value)
        } else if let value = try? container.decode(Double.self) {
            self = .double(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .int(let value): try container.encode(value)
        case .double(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    /// Parses JSON text (strict RFC 8259).
    public static func parse(_ text: String) throws -> JSONValue { try JSONParser.parse(text) }

    /// The canonical text: compact, object keys in UTF-8 byte order, so equal
    /// values give equal bytes on every replica.
    public var canonicalText: String {
        var text = ""
        writeCanonical(to: &text)
        return text
    }

    /// The value of `key` when this is an object.
    public subscript(key: String) -> JSONValue? {
        if case .object(let members) = self { return members[key] }
        return nil
    }

    /// The string when this is a string.
    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }
}

/// Canonical JSON text: compact, keys in UTF-8 byte order, the same bytes on
/// every replica for the same value. Used for payloads, projections and the
/// state hash.
public enum CanonicalJSON {
    /// Encodes any `Encodable` value canonically.
    public static func text<T: Encodable>(of value: T) -> String {
        // Plain Codable values built from strings, integers and finite numbers cannot fail.
        do {
            return try JSONValueEncoder.canonicalText(of: value)
        } catch {
            preconditionFailure("canonical JSON encoding failed for \(T.self): \(error)")
        }
    }

    /// Decodes a value from JSON text.
    public static func decode<T: Decodable>(_ type: T.Type, from text: String) throws -> T {
        try JSONValueDecoder.decode(type, from: text)
    }
}
