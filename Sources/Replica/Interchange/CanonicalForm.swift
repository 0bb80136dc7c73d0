/// Recognises JSON text that is already in canonical form, without building
/// a `JSONValue`: ingest receives payloads that a peer already stored
/// canonically, and parsing and re-encoding each one only to get the same
/// bytes back was a measurable share of its CPU.
///
/// The check is conservative. `true` means that parsing `text` succeeds and
/// `JSONValue.parse(text).canonicalText == text`; `false` means only "not
/// proven here" (a fraction, an exponent, an escaped key, an integer of 19
/// digits or more, whitespace, unsorted keys), and the caller then takes the
/// full path of parsing and re-encoding.
///
/// ```swift
/// CanonicalForm.isCanonicalObject(#"{"quantity":8,"type":"QuantityChanged"}"#)   // true
/// CanonicalForm.isCanonicalObject(#"{"type":"QuantityChanged","quantity":8}"#)   // false: key order
/// ```
enum CanonicalForm {
    /// True when `text` is a JSON object written exactly as `JSONValue.canonicalText` writes it.
    static func isCanonicalObject(_ text: String) -> Bool {
        let verdict = text.utf8.withContiguousStorageIfAvailable { bytes -> Bool in
            guard bytes.first == UInt8(ascii: "{") else { return false }
            var scanner = Scanner(bytes: bytes)
            return scanner.value(depth: 0) && scanner.index == bytes.count
        }
        return verdict ?? false
    }

    /// Where the canonical JSON object at `start` of `bytes` ends (the index
    /// after its `}`), nil when it is not one; `depth` is the nesting it sits
    /// at, so that the depth limit is the parser's for the enclosing text.
    static func canonicalObjectEnd(in bytes: UnsafeBufferPointer<UInt8>, from start: Int, depth: Int) -> Int? {
        guard start < bytes.count, bytes[start] == UInt8(ascii: "{") else { return nil }
        var scanner = Scanner(bytes: bytes)
        scanner.index = start
        return scanner.value(depth: depth) ? scanner.index : nil
    }

    /// A single pass over the bytes that refuses anything not canonical.
    private struct Scanner: ByteScanning {
        let bytes: UnsafeBufferPointer<UInt8>
        var index = 0

        init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

        mutating func value(depth: Int) -> Bool {
            // The parser refuses this depth; so must the check.
            guard depth < JSONParser.maximumDepth, index < bytes.count else { return false }
            switch bytes[index] {
            case UInt8(ascii: "{"): return object(depth: depth)
            case UInt8(ascii: "["): return array(depth: depth)
            case UInt8(ascii: "\""): return string(allowEscapes: true)
            case UInt8(ascii: "t"): return literal("true")
            case UInt8(ascii: "f"): return literal("false")
            case UInt8(ascii: "n"): return literal("null")
            default: return canonicalInteger() != nil
            }
        }

        private mutating func object(depth: Int) -> Bool {
            index += 1
            if accept(UInt8(ascii: "}")) { return true }
            var previousKey: Range<Int>?
            while true {
                guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { return false }
                let keyStart = index + 1
                // An escaped key's decoded bytes differ from its text; leave ordering those to the full path.
                guard string(allowEscapes: false) else { return false }
                let key = keyStart..<(index - 1)
                if let previousKey, !precedes(previousKey, key) { return false }
                previousKey = key
                guard accept(UInt8(ascii: ":")), value(depth: depth + 1) else { return false }
                if accept(UInt8(ascii: "}")) { return true }
                guard accept(UInt8(ascii: ",")) else { return false }
            }
        }

        private mutating func array(depth: Int) -> Bool {
            index += 1
            if accept(UInt8(ascii: "]")) { return true }
            while true {
                guard value(depth: depth + 1) else { return false }
                if accept(UInt8(ascii: "]")) { return true }
                guard accept(UInt8(ascii: ",")) else { return false }
            }
        }

        /// A string with only the escapes `EventJSON.quoted` writes: `\"`, `\\`,
        /// `\n`, `\r`, `\t`, and `\u00xx` (lowercase) for other control characters.
        private mutating func string(allowEscapes: Bool) -> Bool {
            index += 1
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") {
                    index += 1
                    return true
                }
                if byte < 0x20 { return false }
                if byte == UInt8(ascii: "\\") {
                    guard allowEscapes, escape() else { return false }
                } else {
                    index += 1
                }
            }
            return false
        }

        /// One canonical escape, at its backslash.
        private mutating func escape() -> Bool {
            guard index + 1 < bytes.count else { return false }
            switch bytes[index + 1] {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                index += 2
                return true
            case UInt8(ascii: "u"):
                guard index + 6 <= bytes.count, bytes[index + 2] == UInt8(ascii: "0"),
                    bytes[index + 3] == UInt8(ascii: "0"), let high = Self.lowerHex(bytes[index + 4]), high < 2,
                    let low = Self.lowerHex(bytes[index + 5])
                else { return false }
                let scalar = high << 4 | low
                // Newline, return and tab have their short escapes.
                guard scalar != 0x0A, scalar != 0x0D, scalar != 0x09 else { return false }
                index += 6
                return true
            default:
                return false
            }
        }

        private static func lowerHex(_ byte: UInt8) -> UInt8? {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
            default: return nil
            }
        }

        /// Strict UTF-8 byte order of two key texts, as `writeCanonical` sorts keys.
        private func precedes(_ lhs: Range<Int>, _ rhs: Range<Int>) -> Bool {
            UnsafeBufferPointer(rebasing: bytes[lhs]).lexicographicallyPrecedes(
                UnsafeBufferPointer(rebasing: bytes[rhs]))
        }
    }
}
