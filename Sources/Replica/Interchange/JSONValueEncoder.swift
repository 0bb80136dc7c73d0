/// Encodes `Encodable` values to canonical JSON text through a `JSONValue`
/// tree (see `JSONValue.writeCanonical`): the projection a fold stores.
enum JSONValueEncoder {
    /// The canonical JSON text of `value`.
    static func canonicalText<T: Encodable>(of value: T) throws -> String {
        let root = EncodingNode()
        try value.encode(to: ValueEncoder(node: root, codingPath: []))
        return root.resolved.canonicalText
    }
}

/// One value under construction; containers fill it in place, so nested
/// containers can outlive the call that made them.
private final class EncodingNode {
    var scalar: JSONValue?
    var members: [String: EncodingNode]?
    var elements: [EncodingNode]?

    var resolved: JSONValue {
        if let members { return .object(members.mapValues(\.resolved)) }
        if let elements { return .array(elements.map(\.resolved)) }
        return scalar ?? .object([:])
    }
}

private struct ValueEncoder: Encoder, SingleValueEncodingContainer {
    let node: EncodingNode
    let codingPath: [CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        if node.members == nil { node.members = [:] }
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
        node.members?[key.stringValue] = child
        return ValueEncoder(node: child, codingPath: codingPath + [key])
    }

    mutating func encodeNil(forKey key: Key) { child(key).encodeNil() }
    mutating func encode(_ value: Bool, forKey key: Key) { child(key).encode(value) }
    mutating func encode(_ value: String, forKey key: Key) { child(key).encode(value) }
    mutating func encode(_ value: Double, forKey key: Key) throws { try child(key).encode(value) }
    mutating func encode(_ value: Float, forKey key: Key) throws { try child(key).encode(value) }
    mutating func encode(_ value: Int, forKey key: Key) throws { try child(key).encode(value) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { try child(key).encode(value) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { try child(key).encode(value) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { try child(key).encode(value) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { try child(key).encode(value) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { try child(key).encode(value) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { try child(key).encode(value) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { try child(key).encode(value) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { try child(key).encode(value) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { try child(key).encode(value) }
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
        node.members?["super"] = child
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
