/// A declared entity's state as canonical JSON: `deleted`, `id`,
/// `last_modified_ms` and the declared fields, keys in UTF-8 byte order,
/// written directly in the order the plan computed once.
extension FoldPlan {
    /// The state's canonical JSON.
    public func encode(_ state: DeclaredState) -> String {
        var text = "{"
        for (position, key) in layout.enumerated() {
            if position > 0 { text += "," }
            switch key {
            case .deleted: text += state.deleted ? #""deleted":true"# : #""deleted":false"#
            case .id:
                text += #""id":"#
                EventJSON.appendQuoted(state.id, to: &text)
            case .lastModified:
                text += #""last_modified_ms":"#
                text += String(state.lastModifiedMs)
            case .field(let index):
                EventJSON.appendQuoted(fields[index].name, to: &text)
                text += ":"
                state.values[index].write(to: &text)
            }
        }
        return text + "}"
    }

    /// The state a stored projection holds, or nil when the text is not a
    /// state of this plan (every key, each value of its field's type).
    public func decodeState(_ json: String) -> DeclaredState? {
        if let members = FlatJSONObject.members(of: json), members.count == layout.count {
            var state = initialState(id: "")
            for (key, member) in zip(layout, members) {
                switch (key, member.value) {
                case (.deleted, .bool(let flag)) where member.key == "deleted": state.deleted = flag
                case (.id, .string(let id)) where member.key == "id": state.id = id
                case (.lastModified, .int(let ms)) where member.key == "last_modified_ms": state.lastModifiedMs = ms
                case (.field(let index), let value) where member.key == fields[index].name:
                    guard let checked = Self.flatValue(value, of: fields[index]) else { return nil }
                    state.values[index] = checked
                default: return nil
                }
            }
            return state
        }
        guard case .object(let members)? = try? JSONValue.parse(json), members.count == layout.count,
            case .bool(let deleted)? = members["deleted"], case .string(let id)? = members["id"],
            case .int(let lastModified)? = members["last_modified_ms"]
        else { return nil }
        var state = initialState(id: id)
        state.deleted = deleted
        state.lastModifiedMs = lastModified
        for (index, field) in fields.enumerated() {
            guard let given = members[field.name],
                case .success(let value) = field.type.check(given, nullable: field.nullable)
            else { return nil }
            state.values[index] = value
        }
        return state
    }

    private static func flatValue(_ value: FlatJSONObject.Value, of field: Field) -> DeclaredValue? {
        switch (field.type, value) {
        case (_, .null): field.nullable ? .null : nil
        case (.string, .string(let text)), (.reference, .string(let text)): .string(text)
        case (.integer, .int(let number)), (.decimal, .int(let number)), (.timestamp, .int(let number)): .int(number)
        case (.boolean, .bool(let flag)): .bool(flag)
        default: nil
        }
    }

    /// The state as JSON values, for the API.
    public func json(_ state: DeclaredState) -> JSONValue {
        var members: [String: JSONValue] = [
            "deleted": .bool(state.deleted), "id": .string(state.id), "last_modified_ms": .int(state.lastModifiedMs),
        ]
        for (index, field) in fields.enumerated() { members[field.name] = state.values[index].json }
        return .object(members)
    }

    /// The value of a field by name, for filters (nil: no such field).
    public func value(of field: String, in state: DeclaredState) -> DeclaredValue? {
        fields.firstIndex { $0.name == field }.map { state.values[$0] }
    }

    /// The declared type of a state field, for filters.
    public func type(of field: String) -> FieldType? {
        fields.first { $0.name == field }?.type
    }
}
