/// Appends protocol fields to a byte array: fixed-width big-endian integers,
/// LEB128 varints, and length-prefixed byte strings.
struct ByteWriter {
    private(set) var bytes: [UInt8] = []

    init(capacity: Int = 64) {
        bytes.reserveCapacity(capacity)
    }

    mutating func write(_ byte: UInt8) { bytes.append(byte) }

    mutating func write(uint16 value: UInt16) {
        bytes.append(UInt8(value >> 8))
        bytes.append(UInt8(value & 0xFF))
    }

    mutating func write(varint value: UInt64) {
        var rest = value
        while rest >= 0x80 {
            bytes.append(UInt8(rest & 0x7F) | 0x80)
            rest >>= 7
        }
        bytes.append(UInt8(rest))
    }

    /// A signed value, zigzag-encoded so that small negatives stay short.
    mutating func write(zigzag value: Int64) {
        write(varint: UInt64(bitPattern: (value << 1) ^ (value >> 63)))
    }

    mutating func write(raw: some Collection<UInt8>) { bytes.append(contentsOf: raw) }

    mutating func write(lengthPrefixed data: some Collection<UInt8>) {
        write(varint: UInt64(data.count))
        bytes.append(contentsOf: data)
    }

    mutating func write(string: String) { write(lengthPrefixed: string.utf8) }
}

/// Reads what `ByteWriter` wrote, throwing `WireError` at the first field
/// that is missing or out of range.
struct ByteReader {
    private let bytes: [UInt8]
    private var position = 0

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    var isAtEnd: Bool { position == bytes.count }
    var remainingCount: Int { bytes.count - position }

    mutating func readByte(_ field: String) throws -> UInt8 {
        guard position < bytes.count else { throw WireError.truncated(field) }
        defer { position += 1 }
        return bytes[position]
    }

    mutating func readUInt16(_ field: String) throws -> UInt16 {
        let high = try readByte(field)
        let low = try readByte(field)
        return UInt16(high) << 8 | UInt16(low)
    }

    mutating func readVarint(_ field: String) throws -> UInt64 {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let byte = try readByte(field)
            guard shift < 64, shift < 63 || byte <= 1 else { throw WireError.malformed("\(field) overflows 64 bits") }
            value |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { return value }
            shift += 7
        }
    }

    mutating func readZigzag(_ field: String) throws -> Int64 {
        let raw = try readVarint(field)
        return Int64(bitPattern: raw >> 1) ^ -Int64(bitPattern: raw & 1)
    }

    /// A count that must fit what is left of the message, so a forged count
    /// cannot make the reader reserve memory.
    mutating func readCount(_ field: String, minimumElementSize: Int = 1) throws -> Int {
        let count = try readVarint(field)
        guard count <= UInt64(remainingCount / max(minimumElementSize, 1)) else {
            throw WireError.malformed("\(field) of \(count) exceeds the message")
        }
        return Int(count)
    }

    mutating func readRaw(_ count: Int, _ field: String) throws -> [UInt8] {
        guard count <= remainingCount else { throw WireError.truncated(field) }
        defer { position += count }
        return Array(bytes[position..<(position + count)])
    }

    mutating func readLengthPrefixed(_ field: String) throws -> [UInt8] {
        let count = try readCount(field)
        return try readRaw(count, field)
    }

    mutating func readString(_ field: String) throws -> String {
        let raw = try readLengthPrefixed(field)
        guard let string = String(validating: raw, as: UTF8.self) else {
            throw WireError.malformed("\(field) is not UTF-8")
        }
        return string
    }

    func expectEnd(_ message: String) throws {
        guard isAtEnd else { throw WireError.malformed("\(remainingCount) trailing byte(s) after \(message)") }
    }
}
