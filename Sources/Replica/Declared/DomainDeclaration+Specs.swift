/// Reading and checking the parts of a declaration: fields, events, effects.
extension DomainDeclaration.FieldSpec {
    /// A state field (`state`: it has a default) or a payload field (it may be optional).
    init(_ json: JSONValue, at path: String, state: Bool) throws {
        let spec = try DomainDeclaration.object(json, at: path)
        let allowed: Set<String> =
            state
            ? ["type", "of", "scale", "to", "nullable", "default"]
            : ["type", "of", "scale", "to", "nullable", "optional"]
        try DomainDeclaration.onlyKeys(spec, allowed, at: path)
        type = try FieldType.parse(spec, at: path)
        let nullableByDefault: Bool
        switch type {
        case .timestamp, .reference: nullableByDefault = true
        default: nullableByDefault = false
        }
        switch spec["nullable"] {
        case nil: nullable = nullableByDefault
        case .bool(let flag)?: nullable = flag
        default: throw DeclarationError(path: "\(path).nullable", "must be true or false")
        }
        switch spec["optional"] {
        case nil: optional = false
        case .bool(let flag)?: optional = flag
        default: throw DeclarationError(path: "\(path).optional", "must be true or false")
        }
        if let given = spec["default"] {
            switch type.check(given, nullable: nullable) {
            case .success(let value): defaultValue = value
            case .failure(let mismatch): throw DeclarationError(path: "\(path).default", mismatch.description)
            }
        } else {
            defaultValue = type.zero(nullable: nullable)
        }
    }

    func json(state: Bool) -> JSONValue {
        var spec = type.json
        let nullableByDefault: Bool
        switch type {
        case .timestamp, .reference: nullableByDefault = true
        default: nullableByDefault = false
        }
        if nullable != nullableByDefault { spec["nullable"] = .bool(nullable) }
        if state {
            if defaultValue != type.zero(nullable: nullable) { spec["default"] = defaultValue.json }
        } else if optional {
            spec["optional"] = .bool(true)
        }
        return .object(spec)
    }
}

extension DomainDeclaration.EventSpec {
    init(_ json: JSONValue, at path: String, state: [String: DomainDeclaration.FieldSpec]) throws {
        let spec = try DomainDeclaration.object(json, at: path)
        try DomainDeclaration.onlyKeys(spec, ["fields", "effects"], at: path)
        var fields: [String: DomainDeclaration.FieldSpec] = [:]
        for (name, field) in try DomainDeclaration.object(spec["fields"] ?? .object([:]), at: "\(path).fields")
            .sorted(by: { $0.key < $1.key })
        {
            guard DomainDeclaration.isName(name), name != "type" else {
                throw DeclarationError(
                    path: "\(path).fields.\(name)", "a payload field name is letters, digits and _ (not type)")
            }
            fields[name] = try DomainDeclaration.FieldSpec(field, at: "\(path).fields.\(name)", state: false)
        }
        self.fields = fields
        guard case .array(let effectsJSON)? = spec["effects"] else {
            throw DeclarationError(path: "\(path).effects", "must be a list of effects")
        }
        effects = try effectsJSON.enumerated().map { index, effect in
            try DomainDeclaration.EffectSpec(
                effect, at: "\(path).effects.\(index)", payload: fields, state: state)
        }
    }

    var json: JSONValue {
        .object([
            "fields": .object(fields.mapValues { $0.json(state: false) }),
            "effects": .array(effects.map(\.json)),
        ])
    }
}

extension DomainDeclaration.EffectSpec {
    init(
        _ json: JSONValue, at path: String, payload: [String: DomainDeclaration.FieldSpec],
        state: [String: DomainDeclaration.FieldSpec]
    ) throws {
        let spec = try DomainDeclaration.object(json, at: path)
        if spec["delete"] != nil {
            try DomainDeclaration.onlyKeys(spec, ["delete"], at: path)
            guard spec["delete"] == .bool(true) else { throw DeclarationError(path: "\(path).delete", "must be true") }
            self = .delete
            return
        }
        guard let kind = ["set", "add", "insert", "remove"].first(where: { spec[$0] != nil }) else {
            throw DeclarationError(path: path, "needs one of set, add, insert, remove or delete")
        }
        try DomainDeclaration.onlyKeys(spec, [kind, "from", "value"], at: path)
        let fieldName = try DomainDeclaration.string(spec[kind], at: "\(path).\(kind)")
        guard let field = state[fieldName] else {
            throw DeclarationError(path: "\(path).\(kind)", "names no field of the state: \(fieldName)")
        }
        // What the effect's value must be: the field's type, or for insert and remove an element of it.
        let wanted: FieldType
        switch kind {
        case "set":
            wanted = field.type
        case "add":
            guard field.type.isCountable else {
                throw DeclarationError(
                    path: "\(path).add", "\(fieldName) is \(field.type): add needs an integer or decimal")
            }
            wanted = field.type
        default:
            guard case .set(let element) = field.type else {
                throw DeclarationError(path: "\(path).\(kind)", "\(fieldName) is \(field.type): \(kind) needs a set")
            }
            wanted = element
        }
        let source: DomainDeclaration.Source
        switch (spec["from"], spec["value"]) {
        case (.string(let name)?, nil):
            guard let given = payload[name] else {
                throw DeclarationError(path: "\(path).from", "names no field of the event's payload: \(name)")
            }
            let (givenShape, wantedShape) = (Self.shape(given.type), Self.shape(wanted))
            let fits =
                givenShape == wantedShape
                || (kind == "insert" || kind == "remove") && givenShape.element == wantedShape
            guard fits else {
                throw DeclarationError(
                    path: "\(path).from", "\(name) is \(given.type), and \(kind) \(fieldName) needs \(wanted)")
            }
            if given.nullable && !field.nullable && kind == "set" {
                throw DeclarationError(path: "\(path).from", "\(name) may be null, and \(fieldName) may not")
            }
            if given.nullable && kind != "set" {
                throw DeclarationError(path: "\(path).from", "\(kind) takes no null: \(name) may not be nullable")
            }
            source = .payload(name)
        case (nil, let constant?):
            let checked =
                kind == "insert" || kind == "remove"
                ? wanted.check(constant, nullable: false) : wanted.check(constant, nullable: field.nullable)
            switch checked {
            case .success(let value): source = .constant(value)
            case .failure(let mismatch): throw DeclarationError(path: "\(path).value", mismatch.description)
            }
        default:
            throw DeclarationError(path: path, "needs either \"from\" (a payload field) or \"value\" (a constant)")
        }
        switch kind {
        case "set": self = .set(field: fieldName, source: source)
        case "add": self = .add(field: fieldName, source: source)
        case "insert": self = .insert(field: fieldName, source: source)
        default: self = .remove(field: fieldName, source: source)
        }
    }

    /// The type with every reference's target left out: a reference fits
    /// whatever type another names (the target is documentation), also as
    /// the element of a list or set.
    private static func shape(_ type: FieldType) -> FieldType {
        switch type {
        case .reference: .reference(to: "")
        case .list(let element): .list(of: shape(element))
        case .set(let element): .set(of: shape(element))
        default: type
        }
    }

    var json: JSONValue {
        func with(_ kind: String, _ field: String, _ source: DomainDeclaration.Source) -> JSONValue {
            switch source {
            case .payload(let name): .object([kind: .string(field), "from": .string(name)])
            case .constant(let value): .object([kind: .string(field), "value": value.json])
            }
        }
        switch self {
        case .set(let field, let source): return with("set", field, source)
        case .add(let field, let source): return with("add", field, source)
        case .insert(let field, let source): return with("insert", field, source)
        case .remove(let field, let source): return with("remove", field, source)
        case .delete: return .object(["delete": .bool(true)])
        }
    }
}
