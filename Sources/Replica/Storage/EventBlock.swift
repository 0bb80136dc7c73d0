import Foundation

/// The text of one `event_blocks` row: a run of one feed's events stored
/// together (docs/storage.md "Block rows"), as a JSON array with one array
/// per event, so that the stock `sqlite3` reads it with `json_each`:
///
/// ```
/// [["<event id>",<time_ms>,<entity row>,"<entity type>","<entity id>",<entity_prev or null>,<payload>],...]
/// ```
///
/// The event ids are lowercase 8-4-4-4-12 text, the payload the event's
/// canonical JSON object itself (not a string). Feed, seqs, offsets and the
/// arrival time are the row's columns: the `n`-th event has seq
/// `first_seq + n` and local offset `first_offset + n`.
enum EventBlock {
    /// One event of a block, with what the row's columns do not say.
    struct Entry {
        var eventID: UUID
        var timeMs: Int64
        var entityRow: Int64
        var entityType: String
        var entityID: String
        /// The local offset of the entity's previous event (`events.entity_prev`).
        var entityPrev: Int64?
        var payload: String
    }

    /// The block text of `entries`; each payload must be canonical JSON.
    static func text(of entries: [Entry]) -> String {
        // Written as bytes: formatting ids and numbers as strings was most of the cost.
        var bytes: [UInt8] = []
        bytes.reserveCapacity(entries.reduce(2) { $0 + $1.payload.utf8.count + 112 })
        bytes.append(UInt8(ascii: "["))
        for (index, entry) in entries.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            bytes.append(contentsOf: [UInt8(ascii: "["), UInt8(ascii: "\"")])
            appendLowercaseHex(entry.eventID, to: &bytes)
            bytes.append(contentsOf: [UInt8(ascii: "\""), UInt8(ascii: ",")])
            appendDecimal(entry.timeMs, to: &bytes)
            bytes.append(UInt8(ascii: ","))
            appendDecimal(entry.entityRow, to: &bytes)
            bytes.append(UInt8(ascii: ","))
            appendQuoted(entry.entityType, to: &bytes)
            bytes.append(UInt8(ascii: ","))
            appendQuoted(entry.entityID, to: &bytes)
            bytes.append(UInt8(ascii: ","))
            if let previous = entry.entityPrev {
                appendDecimal(previous, to: &bytes)
            } else {
                bytes.append(contentsOf: "null".utf8)
            }
            bytes.append(UInt8(ascii: ","))
            bytes.append(contentsOf: entry.payload.utf8)
            bytes.append(UInt8(ascii: "]"))
        }
        bytes.append(UInt8(ascii: "]"))
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The 8-4-4-4-12 lowercase form of `id`, as `UUID.lowercased` prints it.
    private static func appendLowercaseHex(_ id: UUID, to bytes: inout [UInt8]) {
        let digits: StaticString = "0123456789abcdef"
        withUnsafeBytes(of: id.uuid) { raw in
            for (index, byte) in raw.enumerated() {
                if index == 4 || index == 6 || index == 8 || index == 10 { bytes.append(UInt8(ascii: "-")) }
                digits.withUTF8Buffer { hex in
                    bytes.append(hex[Int(byte >> 4)])
                    bytes.append(hex[Int(byte & 0x0F)])
                }
            }
        }
    }

    /// `String(value)` as bytes.
    private static func appendDecimal(_ value: Int64, to bytes: inout [UInt8]) {
        if value < 0 {
            bytes.append(UInt8(ascii: "-"))
            // Int64.min has no positive counterpart: its magnitude as UInt64.
            appendDecimal(UInt64(bitPattern: 0 &- value), to: &bytes)
        } else {
            appendDecimal(UInt64(value), to: &bytes)
        }
    }

    private static func appendDecimal(_ value: UInt64, to bytes: inout [UInt8]) {
        let start = bytes.count
        var rest = value
        repeat {
            bytes.append(UInt8(ascii: "0") + UInt8(rest % 10))
            rest /= 10
        } while rest > 0
        bytes[start...].reverse()
    }

    /// The JSON string literal of `text`, as `EventJSON.appendQuoted` writes it.
    private static func appendQuoted(_ text: String, to bytes: inout [UInt8]) {
        guard EventJSON.needsEscape(text) else {
            bytes.append(UInt8(ascii: "\""))
            bytes.append(contentsOf: text.utf8)
            bytes.append(UInt8(ascii: "\""))
            return
        }
        var quoted = ""
        EventJSON.appendQuoted(text, to: &quoted)
        bytes.append(contentsOf: quoted.utf8)
    }

    /// The entries of a block's text; nil when it is not a block.
    ///
    /// A block in the shape `text(of:)` writes without a string escape is
    /// read straight from the bytes; any other text is parsed as JSON.
    static func entries(of text: String) -> [Entry]? {
        var text = text
        let fast = text.withUTF8 { bytes -> [Entry]? in
            var reader = Reader(bytes: bytes)
            return reader.block()
        }
        return fast ?? parsedEntries(of: text)
    }

    /// Where each entry of a block's text starts (its `[`); nil when the
    /// text is not one JSON array of arrays. Strings are skipped with their
    /// escapes, so brackets inside ids or payloads do not count.
    static func entryStarts(in bytes: UnsafeBufferPointer<UInt8>) -> [Int]? {
        guard bytes.first == UInt8(ascii: "[") else { return nil }
        var starts: [Int] = []
        var depth = 0
        var inString = false
        var escaped = false
        for index in bytes.indices {
            let byte = bytes[index]
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""):
                inString = true
            case UInt8(ascii: "["), UInt8(ascii: "{"):
                depth += 1
                if depth == 2 {
                    guard byte == UInt8(ascii: "[") else { return nil }
                    starts.append(index)
                }
            case UInt8(ascii: "]"), UInt8(ascii: "}"):
                depth -= 1
                guard depth >= 0 else { return nil }
                if depth == 0 && index != bytes.count - 1 { return nil }
            default:
                continue
            }
        }
        return depth == 0 && !inString ? starts : nil
    }

    /// The entry whose `[` is at `start`, read by the fast reader; nil when
    /// it is not in the shape `text(of:)` writes without escapes.
    static func entry(in bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> Entry? {
        var reader = Reader(bytes: bytes)
        reader.index = start
        return reader.entry()
    }

    /// The general path: any JSON text of the documented shape.
    private static func parsedEntries(of text: String) -> [Entry]? {
        guard case .array(let rows)? = try? JSONValue.parse(text) else { return nil }
        var entries: [Entry] = []
        entries.reserveCapacity(rows.count)
        for row in rows {
            guard case .array(let fields) = row, fields.count == 7,
                case .string(let id) = fields[0], let eventID = UUID(uuidString: id),
                case .int(let timeMs) = fields[1], case .int(let entityRow) = fields[2],
                case .string(let entityType) = fields[3], case .string(let entityID) = fields[4],
                case .object = fields[6]
            else { return nil }
            let entityPrev: Int64?
            switch fields[5] {
            case .null: entityPrev = nil
            case .int(let offset): entityPrev = offset
            default: return nil
            }
            entries.append(
                Entry(
                    eventID: eventID, timeMs: timeMs, entityRow: entityRow, entityType: entityType,
                    entityID: entityID, entityPrev: entityPrev, payload: fields[6].canonicalText))
        }
        return entries
    }

    /// Reads exactly what `text(of:)` writes when no string needs an escape.
    private struct Reader: ByteScanning {
        let bytes: UnsafeBufferPointer<UInt8>
        var index = 0

        mutating func block() -> [Entry]? {
            guard accept(UInt8(ascii: "[")) else { return nil }
            var entries: [Entry] = []
            if accept(UInt8(ascii: "]")) { return index == bytes.count ? entries : nil }
            repeat {
                guard let entry = entry() else { return nil }
                entries.append(entry)
            } while accept(UInt8(ascii: ","))
            guard accept(UInt8(ascii: "]")), index == bytes.count else { return nil }
            return entries
        }

        mutating func entry() -> Entry? {
            guard accept(UInt8(ascii: "[")), let eventID = quotedUUID(),
                accept(UInt8(ascii: ",")), let timeMs = canonicalInteger(),
                accept(UInt8(ascii: ",")), let entityRow = canonicalInteger(),
                accept(UInt8(ascii: ",")), let entityType = unescapedString(),
                accept(UInt8(ascii: ",")), let entityID = unescapedString(),
                accept(UInt8(ascii: ","))
            else { return nil }
            var entityPrev: Int64?
            if !literal("null") {
                guard let offset = canonicalInteger() else { return nil }
                entityPrev = offset
            }
            guard accept(UInt8(ascii: ",")), let payload = canonicalObject(depth: 2), accept(UInt8(ascii: "]")) else {
                return nil
            }
            return Entry(
                eventID: eventID, timeMs: timeMs, entityRow: entityRow, entityType: entityType, entityID: entityID,
                entityPrev: entityPrev, payload: payload)
        }
    }
}
