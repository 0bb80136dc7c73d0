/// An entity type declared as data (docs/domains.md): its fields, its
/// events and what each event does to the state. A declaration is checked
/// whole when it is read (`DomainDeclaration(json:)`), every mistake named
/// by its path, and compiled once into a `FoldPlan` that the fold steps
/// per event.
///
/// ```swift
/// let declaration = try DomainDeclaration(json: try JSONValue.parse(text))
/// let plan = try FoldPlan(declaration)
/// ```
public struct DomainDeclaration: Hashable, Sendable {
    /// The `entity_type` it folds.
    public var entityType: String
    /// Its version: a later declaration of the type has a higher one.
    public var version: Int64
    /// The feed scope its events are written to, when it names one.
    public var scope: String?
    /// The fields of the state, by name.
    public var fields: [String: FieldSpec]
    /// The events, by payload `type`.
    public var events: [String: EventSpec]

    /// A field of the state, or of an event's payload.
    public struct FieldSpec: Hashable, Sendable {
        public var type: FieldType
        /// Whether `null` is a value of the field (`nullable`; true by
        /// default for timestamps and references, false otherwise).
        public var nullable: Bool
        /// For a payload field: whether it may be left out (`optional`).
        public var optional: Bool
        /// For a state field: its value before any event (`default`).
        public var defaultValue: DeclaredValue
    }

    /// An event: its payload's fields and its effects, in order.
    public struct EventSpec: Hashable, Sendable {
        public var fields: [String: FieldSpec]
        public var effects: [EffectSpec]
    }

    /// What an event does to one field, or to the entity.
    public enum EffectSpec: Hashable, Sendable {
        /// `{"set": FIELD, "from": PAYLOAD_FIELD}` or `{"set": FIELD, "value": V}`.
        case set(field: String, source: Source)
        /// `{"add": FIELD, …}`: adds to an integer or decimal field.
        case add(field: String, source: Source)
        /// `{"insert": FIELD, …}`: adds an element (or every element of a list or set) to a set field.
        case insert(field: String, source: Source)
        /// `{"remove": FIELD, …}`: takes an element (or every element) out of a set field.
        case remove(field: String, source: Source)
        /// `{"delete": true}`: the entity is deleted; deletion wins over every later event.
        case delete
    }

    /// Where an effect's value comes from.
    public enum Source: Hashable, Sendable {
        case payload(String)
        case constant(DeclaredValue)
    }

    /// The names a state field may not take: they are the state's own.
    public static let stateKeys: Set<String> = ["id", "deleted", "last_modified_ms"]
    /// Event types every entity type shares (docs/events.md): no declaration may use them.
    public static let reservedEventTypes: Set<String> = SessionEvent.types.union([UndoneEvent.type])

    /// Reads and checks a declaration.
    ///
    /// - Throws: `DeclarationError` naming the path of the first mistake
    ///   (`fields.count.type: unknown type "int"`).
    public init(json: JSONValue) throws {
        let root = try Self.object(json, at: "")
        try Self.onlyKeys(root, ["entity_type", "version", "scope", "fields", "events"], at: "")
        entityType = try Self.string(root["entity_type"], at: "entity_type")
        guard !entityType.isEmpty, !entityType.hasPrefix(FeedID.reservedReplicaIDPrefix) else {
            throw DeclarationError(path: "entity_type", "must not be empty nor begin with peersync/")
        }
        guard case .int(let version)? = root["version"], version >= 1 else {
            throw DeclarationError(path: "version", "must be a whole number of 1 or more")
        }
        self.version = version
        switch root["scope"] {
        case nil: scope = nil
        case .string(let given)? where !given.isEmpty && !given.hasPrefix(FeedID.reservedReplicaIDPrefix):
            scope = given
        default: throw DeclarationError(path: "scope", "must be a scope name, not empty nor beginning with peersync/")
        }
        var fields: [String: FieldSpec] = [:]
        // In key order, so that the first mistake named is the same on every run.
        for (name, spec) in try Self.object(root["fields"] ?? .object([:]), at: "fields").sorted(by: { $0.key < $1.key }
        ) {
            let path = "fields.\(name)"
            guard Self.isName(name), !Self.stateKeys.contains(name) else {
                throw DeclarationError(
                    path: path, "a field name is letters, digits and _ (not id, deleted or last_modified_ms)")
            }
            fields[name] = try FieldSpec(spec, at: path, state: true)
        }
        self.fields = fields
        let eventsJSON = try Self.object(root["events"] ?? .null, at: "events")
        guard !eventsJSON.isEmpty else { throw DeclarationError(path: "events", "declares no event") }
        var events: [String: EventSpec] = [:]
        for (type, spec) in eventsJSON.sorted(by: { $0.key < $1.key }) {
            let path = "events.\(type)"
            guard !type.isEmpty, !Self.reservedEventTypes.contains(type) else {
                throw DeclarationError(path: path, "\(type.isEmpty ? "an empty type" : type) is reserved")
            }
            events[type] = try EventSpec(spec, at: path, state: fields)
        }
        self.events = events
    }

    /// The declaration in normal form, every default left out; it reads
    /// back (`init(json:)`) to an equal declaration. What is stored and
    /// signed is the JSON as it was written (`DeclarationEvent.declarationJSON`).
    public var json: JSONValue {
        var root: [String: JSONValue] = [
            "entity_type": .string(entityType), "version": .int(version),
            "fields": .object(fields.mapValues { $0.json(state: true) }),
            "events": .object(events.mapValues(\.json)),
        ]
        if let scope { root["scope"] = .string(scope) }
        return .object(root)
    }

    static func isName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 64
            && name.utf8.allSatisfy {
                ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7A) || $0 == 0x5F
            }
    }

    static func object(_ value: JSONValue?, at path: String) throws -> [String: JSONValue] {
        guard case .object(let members)? = value else {
            throw DeclarationError(path: path.isEmpty ? "(the declaration)" : path, "must be a JSON object")
        }
        return members
    }

    static func string(_ value: JSONValue?, at path: String) throws -> String {
        guard case .string(let text)? = value else { throw DeclarationError(path: path, "must be a string") }
        return text
    }

    static func onlyKeys(_ object: [String: JSONValue], _ allowed: Set<String>, at path: String) throws {
        if let unknown = object.keys.sorted().first(where: { !allowed.contains($0) }) {
            throw DeclarationError(
                path: path.isEmpty ? unknown : "\(path).\(unknown)",
                "is not part of a declaration here (expected \(allowed.sorted().joined(separator: ", ")))")
        }
    }
}

/// A mistake in a declaration, at a path such as `events.Found.effects.0.add`.
public struct DeclarationError: Error, Hashable, Sendable, CustomStringConvertible {
    public var path: String
    public var reason: String

    public init(path: String, _ reason: String) {
        self.path = path
        self.reason = reason
    }

    public var description: String { "\(path): \(reason)" }
}
