/// Reading an event's payload, applying it, and checking a local one.
extension FoldPlan {
    /// The event a stored payload holds, or nil when the fold must skip it
    /// as poison: no declared `type`, a required field missing, or a field
    /// of another type. Fields the declaration does not name are ignored.
    /// A flat canonical payload is read straight from its bytes; one with
    /// a list or an escape goes through the JSON parser.
    public func decode(_ payload: String) -> DecodedEvent? {
        if let members = FlatJSONObject.members(of: payload) { return decode(flat: members) }
        guard let value = try? JSONValue.parse(payload), case .object(let members) = value else { return nil }
        return decode(members)
    }

    private func decode(flat members: [(key: String, value: FlatJSONObject.Value)]) -> DecodedEvent? {
        guard let type = members.first(where: { $0.key == "type" }), case .string(let name) = type.value,
            let event = events[name]
        else { return nil }
        var values = [DeclaredValue?](repeating: nil, count: event.payload.count)
        // Both in key order: one walk.
        var member = 0
        for (index, field) in event.payload.enumerated() {
            while member < members.count, members[member].key.utf8.lexicographicallyPrecedes(field.name.utf8) {
                member += 1
            }
            guard member < members.count, members[member].key == field.name else {
                guard field.optional else { return nil }
                continue
            }
            guard let value = Self.checked(members[member].value, as: field.type, nullable: field.nullable) else {
                return nil
            }
            values[index] = value
        }
        return DecodedEvent(plan: event, values: values)
    }

    private func decode(_ members: [String: JSONValue]) -> DecodedEvent? {
        guard case .string(let name)? = members["type"], let event = events[name] else { return nil }
        var values = [DeclaredValue?](repeating: nil, count: event.payload.count)
        for (index, field) in event.payload.enumerated() {
            guard let given = members[field.name] else {
                guard field.optional else { return nil }
                continue
            }
            guard case .success(let value) = field.type.check(given, nullable: field.nullable) else { return nil }
            values[index] = value
        }
        return DecodedEvent(plan: event, values: values)
    }

    /// A flat JSON value as a value of `type`, or nil when it is not one.
    private static func checked(_ value: FlatJSONObject.Value, as type: FieldType, nullable: Bool) -> DeclaredValue? {
        switch (type, value) {
        case (_, .null): nullable ? .null : nil
        case (.string, .string(let text)), (.reference, .string(let text)): .string(text)
        case (.integer, .int(let number)), (.decimal, .int(let number)), (.timestamp, .int(let number)): .int(number)
        case (.boolean, .bool(let flag)): .bool(flag)
        default: nil
        }
    }

    /// Applies a decoded event made at `timeMs`: nothing once the entity is
    /// deleted (deletion wins), else its effects in order, and the time.
    public func apply(_ event: DecodedEvent, to state: inout DeclaredState, timeMs: Int64) {
        guard !state.deleted else { return }
        for effect in event.plan.effects {
            switch effect {
            case .set(let field, let operand):
                guard let value = value(of: operand, in: event) else { continue }
                state.values[field] = value
            case .add(let field, let operand):
                guard case .int(let amount)? = value(of: operand, in: event) else { continue }
                let held: Int64 = if case .int(let number) = state.values[field] { number } else { 0 }
                state.values[field] = .int(held &+ amount)
            case .insert(let field, let operand):
                guard let value = value(of: operand, in: event) else { continue }
                state.values[field] = .list(Self.inserting(value, into: state.values[field]))
            case .remove(let field, let operand):
                guard let value = value(of: operand, in: event) else { continue }
                state.values[field] = .list(Self.removing(value, from: state.values[field]))
            case .delete:
                state.deleted = true
            }
        }
        state.lastModifiedMs = timeMs
    }

    private func value(of operand: Operand, in event: DecodedEvent) -> DeclaredValue? {
        switch operand {
        case .payload(let index): event.values[index]
        case .constant(let value): value
        }
    }

    /// A set with `value` (an element, or every element of a list) in it.
    private static func inserting(_ value: DeclaredValue, into held: DeclaredValue) -> [DeclaredValue] {
        var elements: [DeclaredValue] = if case .list(let items) = held { items } else { [] }
        let added: [DeclaredValue] = if case .list(let items) = value { items } else { [value] }
        for element in added {
            let position = elements.partitioningIndex { !DeclaredValue.precedes($0, element) }
            if position == elements.count || elements[position] != element { elements.insert(element, at: position) }
        }
        return elements
    }

    /// A set without `value` (an element, or every element of a list).
    private static func removing(_ value: DeclaredValue, from held: DeclaredValue) -> [DeclaredValue] {
        guard case .list(var elements) = held else { return [] }
        let removed: [DeclaredValue] = if case .list(let items) = value { items } else { [value] }
        for element in removed {
            let position = elements.partitioningIndex { !DeclaredValue.precedes($0, element) }
            if position < elements.count, elements[position] == element { elements.remove(at: position) }
        }
        return elements
    }

    /// Checks a payload written here (a local append, a thin client's push,
    /// an API write) strictly: a declared `type`, every required field, each
    /// of its type, and no field the event does not declare.
    ///
    /// - Throws: `EventLogError.invalidEvent` naming the field.
    public func validate(_ payload: JSONValue) throws {
        guard case .object(let members) = payload else {
            throw EventLogError.invalidEvent("the payload of \(entityType) must be a JSON object")
        }
        guard case .string(let name)? = members["type"] else {
            throw EventLogError.invalidEvent("the payload of \(entityType) needs a \"type\" (one of \(eventTypes))")
        }
        guard let event = events[name] else {
            throw EventLogError.invalidEvent("\(entityType) has no event \"\(name)\" (it has \(eventTypes))")
        }
        for field in event.payload {
            guard let given = members[field.name] else {
                if field.optional { continue }
                throw EventLogError.invalidEvent(
                    "field \"\(field.name)\" of \(entityType) \(name) is missing (it is \(field.type))")
            }
            if case .failure(let mismatch) = field.type.check(given, nullable: field.nullable) {
                throw EventLogError.invalidEvent(
                    "field \"\(field.name)\" of \(entityType) \(name) \(mismatch.description)")
            }
        }
        let declared = Set(event.payload.map(\.name) + ["type"])
        if let unknown = members.keys.sorted().first(where: { !declared.contains($0) }) {
            throw EventLogError.invalidEvent(
                "field \"\(unknown)\" is not declared for \(entityType) \(name)"
                    + (event.payload.isEmpty
                        ? " (it has no field)" : " (it has \(event.payload.map(\.name).joined(separator: ", ")))"))
        }
    }

    private var eventTypes: String { events.keys.sorted().joined(separator: ", ") }
}

extension Array {
    /// The first index where `belongsInSecondPart` is true, for an array
    /// partitioned by it (binary search).
    func partitioningIndex(where belongsInSecondPart: (Element) -> Bool) -> Int {
        var low = 0
        var high = count
        while low < high {
            let middle = (low + high) / 2
            if belongsInSecondPart(self[middle]) { high = middle } else { low = middle + 1 }
        }
        return low
    }
}
