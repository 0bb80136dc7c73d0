/// The events of the Item domain, as JSON payloads with a `type` field:
/// `{"type":"Created","name":"Bolts","quantity":5}`, `{"type":"Renamed","name":"Nuts"}`,
/// `{"type":"QuantityChanged","quantity":8}`, `{"type":"NoteChanged","note":"aisle 4"}`
/// (`"note":null` clears it), `{"type":"Deleted"}`.
public enum ItemEvent: Codable, Sendable, Hashable {
    case created(name: String, quantity: Int64)
    case renamed(name: String)
    case quantityChanged(quantity: Int64)
    case noteChanged(note: String?)
    case deleted

    enum CodingKeys: String, CodingKey {
        case type, name, quantity, note
    }

    /// The payload `type` of each case.
    public var type: String {
        switch self {
        case .created: return "Created"
        case .renamed: return "Renamed"
        case .quantityChanged: return "QuantityChanged"
        case .noteChanged: return "NoteChanged"
        case .deleted: return "Deleted"
        }
    }

    public init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let type = try container.decode(String.self, forKey: .type)
        switch type {
        case "Created":
            self = .created(
                name: try container.decode(String.self, forKey: .name),
                quantity: try container.decode(Int64.self, forKey: .quantity))
        case "Renamed":
            self = .renamed(name: try container.decode(String.self, forKey: .name))
        case "QuantityChanged":
            self = .quantityChanged(quantity: try container.decode(Int64.self, forKey: .quantity))
        case "NoteChanged":
            guard container.contains(.note) else {
                throw DecodingError.keyNotFound(
                    CodingKeys.note, .init(codingPath: [], debugDescription: "NoteChanged needs a note (or null)"))
            }
            self = .noteChanged(note: try container.decodeIfPresent(String.self, forKey: .note))
        case "Deleted":
            self = .deleted
        default:
            throw DecodingError.dataCorruptedError(
                forKey: .type, in: container, debugDescription: "unknown item event type \"\(type)\"")
        }
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(type, forKey: .type)
        switch self {
        case .created(let name, let quantity):
            try container.encode(name, forKey: .name)
            try container.encode(quantity, forKey: .quantity)
        case .renamed(let name):
            try container.encode(name, forKey: .name)
        case .quantityChanged(let quantity):
            try container.encode(quantity, forKey: .quantity)
        case .noteChanged(let note):
            try container.encode(note, forKey: .note)
        case .deleted:
            break
        }
    }

    /// The event in a plain canonical payload with exactly its type's
    /// fields; nil for anything else, which `Codable` then decides.
    init?(storedPayload payload: String) {
        guard let members = FlatJSONObject.members(of: payload) else { return nil }
        var type: String?
        var name: String?
        var quantity: Int64?
        var note: String??
        for (key, value) in members {
            switch (key, value) {
            case ("type", .string(let text)): type = text
            case ("name", .string(let text)): name = text
            case ("quantity", .int(let number)): quantity = number
            case ("note", .string(let text)): note = .some(text)
            case ("note", .null): note = .some(nil)
            default: return nil
            }
        }
        switch (type, name, quantity, note) {
        case ("Created", let name?, let quantity?, nil): self = .created(name: name, quantity: quantity)
        case ("Renamed", let name?, nil, nil): self = .renamed(name: name)
        case ("QuantityChanged", nil, let quantity?, nil): self = .quantityChanged(quantity: quantity)
        case ("NoteChanged", nil, nil, let note?): self = .noteChanged(note: note)
        case ("Deleted", nil, nil, nil): self = .deleted
        default: return nil
        }
    }

    /// The canonical JSON payload of this event.
    public var payload: String { CanonicalJSON.text(of: self) }
}
