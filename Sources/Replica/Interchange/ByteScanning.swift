import Foundation

/// What the one-pass JSON readers over UTF-8 bytes share (`CanonicalForm`'s
/// check, `FlatJSONObject`, `ExportLine`, `EventBlock`): a position in the
/// bytes and the small steps.
protocol ByteScanning {
    var bytes: UnsafeBufferPointer<UInt8> { get }
    var index: Int { get set }
}

extension ByteScanning {
    /// Steps over `byte` when it is next.
    mutating func accept(_ byte: UInt8) -> Bool {
        guard index < bytes.count, bytes[index] == byte else { return false }
        index += 1
        return true
    }

    /// Steps over `word` when it is next.
    mutating func literal(_ word: StaticString) -> Bool {
        let count = word.utf8CodeUnitCount
        guard index + count <= bytes.count, let base = bytes.baseAddress,
            memcmp(base + index, word.utf8Start, count) == 0
        else { return false }
        index += count
        return true
    }

    /// An integer as `String(Int64)` writes it, read and stepped over: no
    /// plus, no leading zero, no `-0`, no fraction or exponent after it; at
    /// most 18 digits, so that it surely fits. Nil for anything else.
    mutating func canonicalInteger() -> Int64? {
        let negative = accept(UInt8(ascii: "-"))
        let start = index
        var value: Int64 = 0
        while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") {
            guard index - start < 18 else { return nil }
            value = value * 10 + Int64(bytes[index] - UInt8(ascii: "0"))
            index += 1
        }
        let digits = index - start
        guard digits >= 1 else { return nil }
        if bytes[start] == UInt8(ascii: "0") && (digits > 1 || negative) { return nil }
        // Compared one by one: an array literal here was a visible cost of reading every line of an import.
        if index < bytes.count,
            bytes[index] == UInt8(ascii: ".") || bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E")
        {
            return nil
        }
        return negative ? -value : value
    }

    /// A string without escapes or control characters, in valid UTF-8,
    /// read and stepped over; nil for anything else.
    mutating func unescapedString() -> String? {
        guard accept(UInt8(ascii: "\"")) else { return nil }
        let start = index
        var ascii = true
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let text = Self.text(UnsafeBufferPointer(rebasing: bytes[start..<index]), ascii: ascii)
                index += 1
                return text
            }
            if byte == UInt8(ascii: "\\") || byte < 0x20 { return nil }
            if byte >= 0x80 { ascii = false }
            index += 1
        }
        return nil
    }

    /// A UUID as a JSON string of exactly 8-4-4-4-12 hex digits (either
    /// case), read and stepped over; nil for anything else.
    mutating func quotedUUID() -> UUID? {
        guard accept(UInt8(ascii: "\"")), index + 37 <= bytes.count,
            let id = ExportLine.uuid(UnsafeBufferPointer(rebasing: bytes[index..<index + 36])),
            bytes[index + 36] == UInt8(ascii: "\"")
        else { return nil }
        index += 37
        return id
    }

    /// The text of the JSON object in canonical form at `index`, read and
    /// stepped over; `depth` is the nesting it sits at (see
    /// `CanonicalForm.canonicalObjectEnd`). Nil when it is not one, or not valid UTF-8.
    mutating func canonicalObject(depth: Int) -> String? {
        guard let end = CanonicalForm.canonicalObjectEnd(in: bytes, from: index, depth: depth) else { return nil }
        let object = UnsafeBufferPointer(rebasing: bytes[index..<end])
        index = end
        return Self.text(object, ascii: !object.contains { $0 >= 0x80 })
    }

    /// The text of `bytes`, nil when they are not valid UTF-8.
    private static func text(_ bytes: UnsafeBufferPointer<UInt8>, ascii: Bool) -> String? {
        ascii ? String(decoding: bytes, as: UTF8.self) : String(validating: bytes, as: UTF8.self)
    }
}
