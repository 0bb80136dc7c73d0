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

    /// A single pass over the bytes that refuses anything not canonical.
    private struct Scanner {
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
            default: return integer()
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

        /// An integer as `String(Int64)` writes it: no plus, no leading zero,
        /// no `-0`; at most 18 digits, so that it surely fits in an `Int64`.
        private mutating func integer() -> Bool {
            let negative = accept(UInt8(ascii: "-"))
            let start = index
            while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") {
                index += 1
            }
            let digits = index - start
            guard digits >= 1, digits <= 18 else { return false }
            if bytes[start] == UInt8(ascii: "0") && (digits > 1 || negative) { return false }
            // A fraction or an exponent: the canonical form of a double is not checked here.
            guard index < bytes.count else { return true }
            let next = bytes[index]
            return next != UInt8(ascii: ".") && next != UInt8(ascii: "e") && next != UInt8(ascii: "E")
        }

        private mutating func literal(_ word: StaticString) -> Bool {
            let count = word.utf8CodeUnitCount
            guard index + count <= bytes.count else { return false }
            for offset in 0..<count where bytes[index + offset] != word.utf8Start[offset] { return false }
            index += count
            return true
        }

        private mutating func accept(_ byte: UInt8) -> Bool {
            guard index < bytes.count, bytes[index] == byte else { return false }
            index += 1
            return true
        }

        /// Strict UTF-8 byte order of two key texts, as `writeCanonical` sorts keys.
        private func precedes(_ lhs: Range<Int>, _ rhs: Range<Int>) -> Bool {
            UnsafeBufferPointer(rebasing: bytes[lhs]).lexicographicallyPrecedes(
                UnsafeBufferPointer(rebasing: bytes[rhs]))
        }
    }
}
