/// Reads a small, flat JSON object in canonical form without building a
/// `JSONValue`: the fast path that hot domains use to decode stored payloads
/// (`FastFoldingEntity.decodeStoredEvent`).
///
/// Only the plainest text is read: keys in strictly ascending byte order,
/// no whitespace, values that are strings without escapes, integers as the
/// canonical writer writes them (at most 18 digits), `null`, `true` or
/// `false`. Anything else gives nil, and the caller then takes the generic
/// `Codable` path, so this can never decode a payload differently.
///
/// ```swift
/// FlatJSONObject.members(of: #"{"quantity":8,"type":"QuantityChanged"}"#)
/// // [("quantity", .int(8)), ("type", .string("QuantityChanged"))]
/// ```
enum FlatJSONObject {
    enum Value: Equatable {
        case string(String)
        case int(Int64)
        case bool(Bool)
        case null
    }

    /// The members of `text` in order, or nil when it is not that plain.
    static func members(of text: String) -> [(key: String, value: Value)]? {
        var text = text
        return text.withUTF8 { bytes in
            var reader = Reader(bytes: bytes)
            return reader.object()
        }
    }

    private struct Reader: ByteScanning {
        let bytes: UnsafeBufferPointer<UInt8>
        var index = 0

        mutating func object() -> [(key: String, value: Value)]? {
            guard accept(UInt8(ascii: "{")) else { return nil }
            var members: [(key: String, value: Value)] = []
            members.reserveCapacity(4)
            if accept(UInt8(ascii: "}")) { return index == bytes.count ? members : nil }
            var previousKey: UnsafeBufferPointer<UInt8>?
            while true {
                guard let key = plainString() else { return nil }
                if let previousKey, !previousKey.lexicographicallyPrecedes(key) { return nil }
                previousKey = key
                guard accept(UInt8(ascii: ":")), let value = value() else { return nil }
                members.append((String(decoding: key, as: UTF8.self), value))
                if accept(UInt8(ascii: ",")) { continue }
                guard accept(UInt8(ascii: "}")), index == bytes.count else { return nil }
                return members
            }
        }

        private mutating func value() -> Value? {
            guard index < bytes.count else { return nil }
            switch bytes[index] {
            case UInt8(ascii: "\""): return plainString().map { .string(String(decoding: $0, as: UTF8.self)) }
            case UInt8(ascii: "t"): return literal("true") ? .bool(true) : nil
            case UInt8(ascii: "f"): return literal("false") ? .bool(false) : nil
            case UInt8(ascii: "n"): return literal("null") ? .null : nil
            default: return canonicalInteger().map { .int($0) }
            }
        }

        /// A string without escapes or control characters: its bytes.
        private mutating func plainString() -> UnsafeBufferPointer<UInt8>? {
            guard accept(UInt8(ascii: "\"")) else { return nil }
            let start = index
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") {
                    index += 1
                    return UnsafeBufferPointer(rebasing: bytes[start..<(index - 1)])
                }
                if byte == UInt8(ascii: "\\") || byte < 0x20 { return nil }
                index += 1
            }
            return nil
        }
    }
}
