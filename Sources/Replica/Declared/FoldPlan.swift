/// A declaration compiled for the fold (STYLE.md 18): field names resolved
/// to indices, each event's payload fields in key order with their types,
/// effects to cases, and the state's keys in the order its canonical JSON
/// writes them. The fold steps the plan per event; it never looks at the
/// declaration again.
///
/// ```swift
/// let plan = try FoldPlan(declaration)
/// var state = plan.initialState(id: "i1")
/// if let event = plan.decode(#"{"quantity":8,"type":"QuantityChanged"}"#) { plan.apply(event, to: &state, timeMs: 5) }
/// plan.encode(state)   // {"deleted":false,"id":"i1","last_modified_ms":5,…,"quantity":8}
/// ```
public struct FoldPlan: Sendable {
    public let declaration: DomainDeclaration
    /// The state's fields, by index.
    let fields: [Field]
    /// The events, by payload `type`.
    let events: [String: EventPlan]
    /// The state's keys in canonical order (UTF-8 bytes).
    let layout: [StateKey]

    /// A state field or a payload field, named (`optional` is false and
    /// `defaultValue` unused for the other kind).
    struct Field: Sendable {
        let name: String
        let type: FieldType
        let nullable: Bool
        let optional: Bool
        let defaultValue: DeclaredValue

        init(_ name: String, _ spec: DomainDeclaration.FieldSpec) {
            self.name = name
            type = spec.type
            nullable = spec.nullable
            optional = spec.optional
            defaultValue = spec.defaultValue
        }
    }

    /// One key of the state's JSON.
    enum StateKey: Sendable {
        case deleted, id, lastModified
        case field(Int)
    }

    struct EventPlan: Sendable {
        /// The payload's declared fields, in key order (as a canonical payload holds them).
        let payload: [Field]
        let effects: [Effect]
    }

    enum Effect: Sendable {
        case set(Int, Operand)
        case add(Int, Operand)
        case insert(Int, Operand)
        case remove(Int, Operand)
        case delete
    }

    /// An effect's value: a payload field (by index in `EventPlan.payload`) or a constant.
    enum Operand: Sendable {
        case payload(Int)
        case constant(DeclaredValue)
    }

    /// An event's payload as the plan reads it: its plan and each payload
    /// field's value (nil where an optional field was left out).
    public struct DecodedEvent: Sendable {
        let plan: EventPlan
        let values: [DeclaredValue?]
    }

    public init(_ declaration: DomainDeclaration) {
        self.declaration = declaration
        func inByteOrder(_ names: some Sequence<String>) -> [String] {
            names.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        }
        let names = inByteOrder(declaration.fields.keys)
        fields = names.map { Field($0, declaration.fields[$0]!) }
        let index = Dictionary(uniqueKeysWithValues: names.enumerated().map { ($1, $0) })
        var keys: [(String, StateKey)] = [("deleted", .deleted), ("id", .id), ("last_modified_ms", .lastModified)]
        keys += names.enumerated().map { ($1, .field($0)) }
        let kinds = Dictionary(uniqueKeysWithValues: keys)
        layout = inByteOrder(kinds.keys).map { kinds[$0]! }
        events = declaration.events.mapValues { spec in
            let payloadNames = inByteOrder(spec.fields.keys)
            let payloadIndex = Dictionary(uniqueKeysWithValues: payloadNames.enumerated().map { ($1, $0) })
            func operand(_ source: DomainDeclaration.Source) -> Operand {
                switch source {
                case .payload(let name): .payload(payloadIndex[name]!)
                case .constant(let value): .constant(value)
                }
            }
            return EventPlan(
                payload: payloadNames.map { Field($0, spec.fields[$0]!) },
                effects: spec.effects.map { effect in
                    switch effect {
                    case .set(let field, let source): .set(index[field]!, operand(source))
                    case .add(let field, let source): .add(index[field]!, operand(source))
                    case .insert(let field, let source): .insert(index[field]!, operand(source))
                    case .remove(let field, let source): .remove(index[field]!, operand(source))
                    case .delete: .delete
                    }
                })
        }
    }

    public var entityType: String { declaration.entityType }

    /// The state before any event.
    public func initialState(id: String) -> DeclaredState {
        DeclaredState(id: id, values: fields.map(\.defaultValue))
    }
}
