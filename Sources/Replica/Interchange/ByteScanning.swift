import Foundation

/// What the one-pass JSON readers over UTF-8 bytes share (`CanonicalForm`'s
/// check, `FlatJSONObject`): a position in the bytes and the small steps.
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
}
