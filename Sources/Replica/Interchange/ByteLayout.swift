/// The byte layout pieces that feed chains and checkpoints share:
/// big-endian integers, texts as a u32 big-endian byte count and their
/// UTF-8 bytes (docs/protocol.md "Signed feeds", "Checkpoints").
enum ByteLayout {
    static func append(text: String, to bytes: inout [UInt8]) {
        append(bigEndian: UInt32(text.utf8.count), to: &bytes)
        bytes += text.utf8
    }

    static func append<Value: FixedWidthInteger>(bigEndian value: Value, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.bigEndian) { bytes += $0 }
    }

    /// `(type, id)` byte order, as SQLite sorts the entities table.
    static func sortsBefore(_ a: (type: String, id: String), _ b: (type: String, id: String)) -> Bool {
        if !a.type.utf8.elementsEqual(b.type.utf8) { return a.type.utf8.lexicographicallyPrecedes(b.type.utf8) }
        return a.id.utf8.lexicographicallyPrecedes(b.id.utf8)
    }

    /// Reads the pieces back, each named in the `CheckpointError.malformed`
    /// it throws when the bytes end early.
    struct Reader {
        let bytes: [UInt8]
        var position: Int

        var isAtEnd: Bool { position == bytes.count }

        mutating func raw(_ count: Int, _ what: String) throws -> [UInt8] {
            guard count >= 0, bytes.count - position >= count else {
                throw CheckpointError.malformed("it ends inside the \(what)")
            }
            defer { position += count }
            return Array(bytes[position..<position + count])
        }

        mutating func integer(_ what: String) throws -> UInt64 {
            try raw(8, what).reduce(0) { $0 << 8 | UInt64($1) }
        }

        mutating func count(_ what: String) throws -> Int {
            Int(try raw(4, what).reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
        }

        mutating func text(_ what: String) throws -> String {
            let count = try count(what)
            guard let text = String(validating: try raw(count, what), as: UTF8.self) else {
                throw CheckpointError.malformed("the \(what) is not UTF-8")
            }
            return text
        }

        mutating func flag(_ what: String) throws -> Bool {
            switch try raw(1, what)[0] {
            case 0: return false
            case 1: return true
            case let other: throw CheckpointError.malformed("the \(what) flag is \(other), not 0 or 1")
            }
        }
    }
}
