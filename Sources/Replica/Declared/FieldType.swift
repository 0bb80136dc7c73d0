/// The type of a declared field (docs/domains.md "Field types").
public indirect enum FieldType: Hashable, Sendable, CustomStringConvertible {
    case string
    case integer
    /// An exact amount as whole units of 10^-scale (cents for 2): a JSON integer.
    case decimal(scale: Int)
    case boolean
    /// Milliseconds since 1970, a JSON integer.
    case timestamp
    /// Another entity's id (a string), of the type named.
    case reference(to: String)
    /// An ordered list; its order is the one the setting event gave.
    case list(of: FieldType)
    /// A set of distinct elements, kept in canonical order.
    case set(of: FieldType)

    public var description: String {
        switch self {
        case .string: "string"
        case .integer: "integer"
        case .decimal(let scale): "decimal (scale \(scale))"
        case .boolean: "boolean"
        case .timestamp: "timestamp"
        case .reference(let type): "reference to \(type)"
        case .list(let element): "list of \(element)"
        case .set(let element): "set of \(element)"
        }
    }

    /// The element type of a list or set.
    var element: FieldType? {
        switch self {
        case .list(let element), .set(let element): element
        default: nil
        }
    }

    /// Whether values of this type are numbers an `add` can sum.
    var isCountable: Bool {
        switch self {
        case .integer, .decimal: true
        default: false
        }
    }

    /// The value a field of this type holds before any event, when its
    /// declaration gives none.
    func zero(nullable: Bool) -> DeclaredValue {
        if nullable { return .null }
        switch self {
        case .string, .reference: return .string("")
        case .integer, .decimal, .timestamp: return .int(0)
        case .boolean: return .bool(false)
        case .list, .set: return .list([])
        }
    }

    /// Reads `{"type": …, "of": …, "scale": …, "to": …}` at `path`.
    static func parse(_ spec: [String: JSONValue], at path: String) throws -> FieldType {
        let name = try DomainDeclaration.string(spec["type"], at: "\(path).type")
        // Each type takes only its own parameters: a stray one is a mistake, not a no-op.
        let parameters: [String: String] = ["of": "list, set", "scale": "decimal", "to": "reference"]
        let own: Set<String> = ["list": ["of"], "set": ["of"], "decimal": ["scale"], "reference": ["to"]][name] ?? []
        if let stray = parameters.keys.sorted().first(where: { spec[$0] != nil && !own.contains($0) }) {
            throw DeclarationError(path: "\(path).\(stray)", "only a \(parameters[stray]!) takes \(stray)")
        }
        switch name {
        case "string": return .string
        case "integer": return .integer
        case "boolean": return .boolean
        case "timestamp": return .timestamp
        case "decimal":
            guard case .int(let scale)? = spec["scale"] ?? .int(0), (0...18).contains(scale) else {
                throw DeclarationError(path: "\(path).scale", "must be a whole number from 0 to 18")
            }
            return .decimal(scale: Int(scale))
        case "reference":
            let target = try DomainDeclaration.string(spec["to"], at: "\(path).to")
            guard !target.isEmpty else { throw DeclarationError(path: "\(path).to", "must name an entity type") }
            return .reference(to: target)
        case "list", "set":
            let elementPath = "\(path).of"
            let element: FieldType
            switch spec["of"] {
            case .string(let scalar)?: element = try parse(["type": .string(scalar)], at: elementPath)
            case .object(let nested)?:
                try DomainDeclaration.onlyKeys(nested, ["type", "scale", "to"], at: elementPath)
                element = try parse(nested, at: elementPath)
            default: throw DeclarationError(path: elementPath, "must name the element type")
            }
            guard element.element == nil else {
                throw DeclarationError(path: elementPath, "a list or set holds scalars, not \(element)")
            }
            return name == "list" ? .list(of: element) : .set(of: element)
        default:
            throw DeclarationError(
                path: "\(path).type",
                "unknown type \"\(name)\" (string, integer, decimal, boolean, timestamp, reference, list, set)")
        }
    }

    /// The type as a declaration writes it.
    var json: [String: JSONValue] {
        switch self {
        case .string: ["type": .string("string")]
        case .integer: ["type": .string("integer")]
        case .decimal(let scale): ["type": .string("decimal"), "scale": .int(Int64(scale))]
        case .boolean: ["type": .string("boolean")]
        case .timestamp: ["type": .string("timestamp")]
        case .reference(let target): ["type": .string("reference"), "to": .string(target)]
        case .list(let element): ["type": .string("list"), "of": .object(element.json)]
        case .set(let element): ["type": .string("set"), "of": .object(element.json)]
        }
    }

    /// `value` as a value of this type, or why it is not one.
    func check(_ value: JSONValue, nullable: Bool) -> Result<DeclaredValue, ValueMismatch> {
        switch (self, value) {
        case (_, .null): return nullable ? .success(.null) : .failure(ValueMismatch(expected: self, found: value))
        case (.string, .string(let text)), (.reference, .string(let text)): return .success(.string(text))
        case (.integer, .int(let number)), (.decimal, .int(let number)), (.timestamp, .int(let number)):
            return .success(.int(number))
        case (.boolean, .bool(let flag)): return .success(.bool(flag))
        case (.list(let element), .array(let items)), (.set(let element), .array(let items)):
            var values: [DeclaredValue] = []
            values.reserveCapacity(items.count)
            for item in items {
                switch element.check(item, nullable: false) {
                case .success(let checked): values.append(checked)
                case .failure: return .failure(ValueMismatch(expected: self, found: value))
                }
            }
            if case .set = self { values = DeclaredValue.canonicalSet(values) }
            return .success(.list(values))
        default:
            return .failure(ValueMismatch(expected: self, found: value))
        }
    }
}

/// A JSON value that is not of the type a field declares.
struct ValueMismatch: Error {
    let expected: FieldType
    let found: JSONValue

    var description: String {
        let kind =
            switch found {
            case .null: "null"
            case .bool: "a boolean"
            case .int: "an integer"
            case .double: "a number with a fraction or exponent"
            case .string: "a string"
            case .array: "a list, or one with an element of another type"
            case .object: "an object"
            }
        return "must be \(expected), not \(kind)"
    }
}

/// A value of a declared field: `null`, a string, an integer (integers,
/// decimals in units, timestamps), a boolean, or the elements of a list or
/// set (a set's in canonical order, each once).
public enum DeclaredValue: Hashable, Sendable {
    case null
    case string(String)
    case int(Int64)
    case bool(Bool)
    case list([DeclaredValue])

    /// Elements sorted as the canonical JSON of a set writes them (strings
    /// by UTF-8 bytes, numbers by value), each once.
    static func canonicalSet(_ values: [DeclaredValue]) -> [DeclaredValue] {
        var sorted = values.sorted(by: DeclaredValue.precedes)
        var index = 1
        while index < sorted.count {
            if sorted[index] == sorted[index - 1] { sorted.remove(at: index) } else { index += 1 }
        }
        return sorted
    }

    /// The order of a set's elements.
    static func precedes(_ left: DeclaredValue, _ right: DeclaredValue) -> Bool {
        switch (left, right) {
        case (.string(let a), .string(let b)): a.utf8.lexicographicallyPrecedes(b.utf8)
        case (.int(let a), .int(let b)): a < b
        case (.bool(let a), .bool(let b)): !a && b
        default: left.rank < right.rank
        }
    }

    private var rank: Int {
        switch self {
        case .null: 0
        case .bool: 1
        case .int: 2
        case .string: 3
        case .list: 4
        }
    }

    /// The value as JSON.
    public var json: JSONValue {
        switch self {
        case .null: .null
        case .string(let text): .string(text)
        case .int(let number): .int(number)
        case .bool(let flag): .bool(flag)
        case .list(let items): .array(items.map(\.json))
        }
    }

    /// Appends the value's canonical JSON.
    func write(to text: inout String) {
        switch self {
        case .null: text += "null"
        case .string(let value): EventJSON.appendQuoted(value, to: &text)
        case .int(let number): text += String(number)
        case .bool(let flag): text += flag ? "true" : "false"
        case .list(let items):
            text += "["
            for (index, item) in items.enumerated() {
                if index > 0 { text += "," }
                item.write(to: &text)
            }
            text += "]"
        }
    }
}
