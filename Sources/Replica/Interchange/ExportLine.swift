import Foundation

extension EventJSON {
    /// Parses one line of an NDJSON file given as its bytes (a trailing
    /// line break allowed); nil for a blank line.
    ///
    /// Exactly `event(fromLine:)` of the line's text with whitespace trimmed,
    /// the text read as `String(cString:)` reads it (up to a NUL byte, bad
    /// UTF-8 replaced). A line in the very shape `peerd export` writes is
    /// read straight from the bytes (``ExportLine``), without a `JSONValue`
    /// or a string per field; any other line takes the general path.
    public static func event(fromLineBytes bytes: UnsafeBufferPointer<UInt8>) throws -> Event? {
        var end = bytes.count
        while end > 0,
            bytes[end - 1] == 0x20 || bytes[end - 1] == 0x0A || bytes[end - 1] == 0x0D || bytes[end - 1] == 0x09
        {
            end -= 1
        }
        if let event = ExportLine.event(UnsafeBufferPointer(rebasing: bytes[..<end])) { return event }
        let text = String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
        let line = text.trimmingCharacters(in: .whitespacesAndNewlines)
        if line.isEmpty { return nil }
        return try event(fromLine: line)
    }
}

/// Reads a line in exactly the shape `EventJSON.line(for:offset:arrivalTimeMs:)`
/// writes, without building a `JSONValue`: the fields in its order, no
/// whitespace, strings without escapes, integers as `String(Int64)` writes
/// them (at most 18 digits), a lowercase or uppercase 8-4-4-4-12 event id, a
/// payload already in canonical form, `server_offset` and `server_time_ms`
/// an integer or `null`.
///
/// Anything else gives nil (the caller then takes the general path), so
/// this never reads a line differently: when it gives an event,
/// `EventJSON.event(fromLine:)` gives the same one (tests compare the two).
enum ExportLine {
    static func event(_ bytes: UnsafeBufferPointer<UInt8>) -> Event? {
        var reader = Reader(bytes: bytes)
        return reader.event()
    }

    private struct Reader: ByteScanning {
        let bytes: UnsafeBufferPointer<UInt8>
        var index = 0

        mutating func event() -> Event? {
            guard literal(#"{"replica_event_id":"#), let eventID = quotedUUID(),
                literal(#","replica_id":"#), let replicaID = unescapedString(),
                literal(#","scope":"#), let scope = unescapedString(),
                literal(#","replica_write_offset":"#), let seq = canonicalInteger(), seq >= 1,
                literal(#","replica_time_ms":"#), let timeMs = canonicalInteger(),
                literal(#","entity_type":"#), let entityType = unescapedString(),
                literal(#","entity_id":"#), let entityID = unescapedString(),
                literal(#","payload":"#), let payload = payload(),
                literal(#","server_offset":"#), integerOrNull(),
                literal(#","server_time_ms":"#), integerOrNull(),
                accept(UInt8(ascii: "}")), index == bytes.count
            else { return nil }
            return Event(
                eventID: eventID, feed: FeedID(replicaID: replicaID, scope: scope), seq: UInt64(seq),
                timeMs: timeMs, entityType: entityType, entityID: entityID, payload: payload)
        }

        /// The payload object's text, when it is canonical JSON in valid UTF-8.
        private mutating func payload() -> String? {
            // The general parser reads the payload one level down in the line: so does the check.
            canonicalObject(depth: 1)
        }

        private mutating func integerOrNull() -> Bool {
            literal("null") || canonicalInteger() != nil
        }
    }

    /// The UUID of exactly 8-4-4-4-12 hex digits (either case), as `UUID(uuidString:)` reads it.
    static func uuid(_ text: UnsafeBufferPointer<UInt8>) -> UUID? {
        guard text.count == 36, text[8] == UInt8(ascii: "-"), text[13] == UInt8(ascii: "-"),
            text[18] == UInt8(ascii: "-"), text[23] == UInt8(ascii: "-")
        else { return nil }
        // The 32 digits into two words: no array per id.
        var high: UInt64 = 0
        var low: UInt64 = 0
        var digits = 0
        for index in 0..<36 where index != 8 && index != 13 && index != 18 && index != 23 {
            guard let digit = hexDigit(text[index]) else { return nil }
            if digits < 16 { high = high << 4 | UInt64(digit) } else { low = low << 4 | UInt64(digit) }
            digits += 1
        }
        return withUnsafeBytes(of: (high.bigEndian, low.bigEndian)) { UUID(uuid: $0.loadUnaligned(as: uuid_t.self)) }
    }

    private static func hexDigit(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
