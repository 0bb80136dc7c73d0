/// The built-in example domain: an inventory item.
///
/// Deletion wins: once deleted, every later event in the canonical order is
/// ignored and `lastModifiedMs` stays at the delete's time. Events ordered
/// before `Created` (clock skew) apply, then `Created` sets name and quantity.
public struct Item: EventSourcedEntity, Hashable {
    public static let entityType = "item"

    public var id: String
    public var name: String
    public var quantity: Int64
    public var note: String?
    public var deleted: Bool
    public var lastModifiedMs: Int64

    public init(id: String) {
        self.id = id
        name = ""
        quantity = 0
        note = nil
        deleted = false
        lastModifiedMs = 0
    }

    public mutating func apply(_ event: ItemEvent, info: ModificationInfo) {
        guard !deleted else { return }
        switch event {
        case .created(let name, let quantity):
            self.name = name
            self.quantity = quantity
        case .renamed(let name):
            self.name = name
        case .quantityChanged(let quantity):
            self.quantity = quantity
        case .noteChanged(let note):
            self.note = note
        case .deleted:
            deleted = true
        }
        lastModifiedMs = info.timeMs
    }

    enum CodingKeys: String, CodingKey {
        case id, name, quantity, note, deleted
        case lastModifiedMs = "last_modified_ms"
    }

    /// Encodes every field, `note` as `null` when unset, so the projection's
    /// JSON has one shape.
    public func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(name, forKey: .name)
        try container.encode(quantity, forKey: .quantity)
        try container.encode(note, forKey: .note)
        try container.encode(deleted, forKey: .deleted)
        try container.encode(lastModifiedMs, forKey: .lastModifiedMs)
    }
}

/// The fold's hot loop decodes `Item` payloads and encodes its states
/// directly (`FastFoldingEntity`).
extension Item: FastFoldingEntity {
    static func decodeStoredEvent(_ payload: String) -> ItemEvent? {
        ItemEvent(storedPayload: payload)
    }

    /// Read straight from the bytes when the row is exactly what
    /// `canonicalJSON` writes for an id, name and note without escapes (a fold
    /// on top of a stored row decodes one per entity); anything else is left
    /// to `Codable`.
    init?(storedState json: String) {
        guard let members = FlatJSONObject.members(of: json), members.count == 6,
            case ("deleted", .bool(let deleted)) = members[0],
            case ("id", .string(let id)) = members[1],
            case ("last_modified_ms", .int(let lastModifiedMs)) = members[2],
            case ("name", .string(let name)) = members[3],
            case ("quantity", .int(let quantity)) = members[5]
        else { return nil }
        switch members[4] {
        case ("note", .string(let note)): self.note = note
        case ("note", .null): self.note = nil
        default: return nil
        }
        self.id = id
        self.name = name
        self.quantity = quantity
        self.deleted = deleted
        self.lastModifiedMs = lastModifiedMs
    }

    /// Written directly (the fold encodes a state per entity per write);
    /// the tests check it equals the `Codable` encoding, `encode(to:)`.
    var canonicalJSON: String {
        var text = deleted ? #"{"deleted":true,"id":"# : #"{"deleted":false,"id":"#
        EventJSON.appendQuoted(id, to: &text)
        text += #","last_modified_ms":"#
        text += String(lastModifiedMs)
        text += #","name":"#
        EventJSON.appendQuoted(name, to: &text)
        text += #","note":"#
        if let note { EventJSON.appendQuoted(note, to: &text) } else { text += "null" }
        text += #","quantity":"#
        text += String(quantity)
        text += "}"
        return text
    }
}
