/// Encodes `Encodable` values to canonical JSON text (the text
/// `JSONValue.writeCanonical` writes): the projection a fold stores. The
/// tree of nodes is written out directly, members sorted once per object,
/// without going through a `JSONValue` and its dictionaries.
enum JSONValueEncoder {
    /// The canonical JSON text of `value`.
    static func canonicalText<T: Encodable>(of value: T) throws -> String {
        let root = EncodingNode()
        try value.encode(to: ValueEncoder(node: root, codingPath: []))
        var text = ""
        text.reserveCapacity(256)
        root.writeCanonical(to: &text)
        return text
    }
}

/// One value under construction; containers fill it in place, so nested
/// containers can outlive the call that made them.
private final class EncodingNode {
    /// An object member: a scalar already written as canonical text, or a
    /// node that a nested encoder fills.
    struct Member {
        enum Value {
            case text(String)
            case node(EncodingNode)
        }
        var key: String
        var value: Value
    }

    var scalar: JSONValue?
    /// Members in the order they were encoded; a key encoded twice keeps its last value.
    var members: [Member]?
    var elements: [EncodingNode]?

    func writeCanonical(to output: inout String) {
        if let members {
            Self.writeObject(members, to: &output)
        } else if let elements {
            output += "["
            for (position, element) in elements.enumerated() {
                if position > 0 { output += "," }
                element.writeCanonical(to: &output)
            }
            output += "]"
        } else {
            (scalar ?? .object([:])).writeCanonical(to: &output)
        }
    }

    /// Writes the members in UTF-8 byte order of their keys, the last of any
    /// repeated key only. (An insertion sort of positions on the stack: the
    /// objects a fold encodes have a handful of members.)
    private static func writeObject(_ members: [Member], to output: inout String) {
        output += "{"
        withUnsafeTemporaryAllocation(of: Int.self, capacity: members.count) { order in
            for position in members.indices {
                var slot = position
                while slot > 0, members[position].key.utf8.lexicographicallyPrecedes(members[order[slot - 1]].key.utf8)
                {
                    order[slot] = order[slot - 1]
                    slot -= 1
                }
                order[slot] = position
            }
            // Equal keys stay in encoding order, so the last of a run is the one to keep.
            var first = true
            for slot in 0..<members.count {
                let member = members[order[slot]]
                if slot + 1 < members.count, members[order[slot + 1]].key.utf8.elementsEqual(member.key.utf8) {
                    continue
                }
                if !first { output += "," }
                first = false
                EventJSON.appendQuoted(member.key, to: &output)
                output += ":"
                switch member.value {
                case .text(let text): output += text
                case .node(let node): node.writeCanonical(to: &output)
                }
            }
        }
        output += "}"
    }
}

private struct ValueEncoder: Encoder, SingleValueEncodingContainer {
    let node: EncodingNode
    /// The path of the container this value is in, and its key there: the
    /// full path is built only when asked for (errors, nested containers).
    let parentPath: [CodingKey]
    let key: CodingKey?
    var codingPath: [CodingKey] { key.map { parentPath + [$0] } ?? parentPath }

    init(node: EncodingNode, codingPath: [CodingKey]) {
        self.init(node: node, parentPath: codingPath, key: nil)
    }

    init(node: EncodingNode, parentPath: [CodingKey], key: CodingKey?) {
        self.node = node
        self.parentPath = parentPath
        self.key = key
    }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        if node.members == nil {
            node.members = []
            node.members?.reserveCapacity(8)
        }
        return KeyedEncodingContainer(KeyedValueEncoder<Key>(node: node, codingPath: codingPath))
    }

    func unkeyedContainer() -> UnkeyedEncodingContainer {
        if node.elements == nil { node.elements = [] }
        return UnkeyedValueEncoder(node: node, codingPath: codingPath)
    }

    func singleValueContainer() -> SingleValueEncodingContainer { self }

    func encodeNil() { node.scalar = .null }
    func encode(_ value: Bool) { node.scalar = .bool(value) }
    func encode(_ value: String) { node.scalar = .string(value) }
    func encode(_ value: Double) throws { node.scalar = try Self.number(value, codingPath) }
    func encode(_ value: Float) throws { node.scalar = try Self.number(Double(value), codingPath) }
    func encode(_ value: Int) throws { try encodeInteger(value) }
    func encode(_ value: Int8) throws { try encodeInteger(value) }
    func encode(_ value: Int16) throws { try encodeInteger(value) }
    func encode(_ value: Int32) throws { try encodeInteger(value) }
    func encode(_ value: Int64) throws { try encodeInteger(value) }
    func encode(_ value: UInt) throws { try encodeInteger(value) }
    func encode(_ value: UInt8) throws { try encodeInteger(value) }
    func encode(_ value: UInt16) throws { try encodeInteger(value) }
    func encode(_ value: UInt32) throws { try encodeInteger(value) }
    func encode(_ value: UInt64) throws { try encodeInteger(value) }
    func encode<T: Encodable>(_ value: T) throws { try value.encode(to: self) }

    private func encodeInteger<I: FixedWidthInteger>(_ value: I) throws {
        guard let exact = Int64(exactly: value) else {
            throw EncodingError.invalidValue(
                value, .init(codingPath: codingPath, debugDescription: "integer does not fit in 64 signed bits"))
        }
        node.scalar = .int(exact)
    }

    static func number(_ value: Double, _ codingPath: [CodingKey]) throws -> JSONValue {
        guard value.isFinite else {
            throw EncodingError.invalidValue(
                value, .init(codingPath: codingPath, debugDescription: "JSON has no infinities or NaN"))
        }
        return .double(value)
    }
}

private struct KeyedValueEncoder<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let node: EncodingNode
    let codingPath: [CodingKey]

    /// A fresh child node for `key`, and an encoder writing into it.
    private func child(_ key: Key) -> ValueEncoder {
        let child = EncodingNode()
        node.members?.append(EncodingNode.Member(key: key.stringValue, value: .node(child)))
        return ValueEncoder(node: child, parentPath: codingPath, key: key)
    }

    /// Records a scalar member as its canonical text at once: no node.
    private func scalar(_ key: Key, _ value: JSONValue) {
        var text = ""
        value.writeCanonical(to: &text)
        node.members?.append(EncodingNode.Member(key: key.stringValue, value: .text(text)))
    }

    private func integer<I: FixedWidthInteger & Encodable>(_ value: I, _ key: Key) throws {
        guard let exact = Int64(exactly: value) else { return try child(key).encode(value) }
        node.members?.append(EncodingNode.Member(key: key.stringValue, value: .text(String(exact))))
    }

    mutating func encodeNil(forKey key: Key) { scalar(key, .null) }
    mutating func encode(_ value: Bool, forKey key: Key) { scalar(key, .bool(value)) }
    mutating func encode(_ value: String, forKey key: Key) { scalar(key, .string(value)) }
    mutating func encode(_ value: Double, forKey key: Key) throws { try child(key).encode(value) }
    mutating func encode(_ value: Float, forKey key: Key) throws { try child(key).encode(value) }
    mutating func encode(_ value: Int, forKey key: Key) throws { try integer(value, key) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { try integer(value, key) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { try integer(value, key) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { try integer(value, key) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { try integer(value, key) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { try integer(value, key) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { try integer(value, key) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { try integer(value, key) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { try integer(value, key) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { try integer(value, key) }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws { try value.encode(to: child(key)) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key)
        -> KeyedEncodingContainer<NestedKey>
    {
        child(key).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> UnkeyedEncodingContainer {
        child(key).unkeyedContainer()
    }

    mutating func superEncoder() -> Encoder {
        let child = EncodingNode()
        node.members?.append(EncodingNode.Member(key: "super", value: .node(child)))
        return ValueEncoder(node: child, codingPath: codingPath)
    }

    mutating func superEncoder(forKey key: Key) -> Encoder { child(key) }
}

private struct UnkeyedValueEncoder: UnkeyedEncodingContainer {
    let node: EncodingNode
    let codingPath: [CodingKey]
    var count: Int { node.elements?.count ?? 0 }

    private func next() -> ValueEncoder {
        let child = EncodingNode()
        node.elements?.append(child)
        return ValueEncoder(node: child, codingPath: codingPath)
    }

    mutating func encodeNil() { next().encodeNil() }
    mutating func encode<T: Encodable>(_ value: T) throws { try value.encode(to: next()) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type)
        -> KeyedEncodingContainer<NestedKey>
    {
        next().container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer() -> UnkeyedEncodingContainer { next().unkeyedContainer() }
    mutating func superEncoder() -> Encoder { next() }
}
