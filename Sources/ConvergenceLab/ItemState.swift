import Foundation
import Replica

/// An item as a projection shows it, to compare a node's view with the lab's own fold.
public struct ItemState: Sendable, Equatable, CustomStringConvertible {
    public var name: String
    public var quantity: Int64
    public var note: String?
    public var deleted: Bool
    public var lastModifiedMs: Int64

    public init(name: String, quantity: Int64, note: String?, deleted: Bool, lastModifiedMs: Int64) {
        self.name = name
        self.quantity = quantity
        self.note = note
        self.deleted = deleted
        self.lastModifiedMs = lastModifiedMs
    }

    init(_ item: Item) {
        self.init(
            name: item.name, quantity: item.quantity, note: item.note, deleted: item.deleted,
            lastModifiedMs: item.lastModifiedMs)
    }

    public var description: String {
        "name=\(name) quantity=\(quantity) note=\(note ?? "nil") deleted=\(deleted) modified=\(lastModifiedMs)"
    }
}

/// `GET /items?include_deleted=true`.
struct ItemList: Decodable {
    struct Entry: Decodable {
        var id: String
        var name: String
        var quantity: Int64
        var note: String?
        var deleted: Bool
        var last_modified_ms: Int64
    }

    var items: [Entry]

    /// The items by id.
    static func states(_ body: String) throws -> [String: ItemState] {
        let list = try JSONDecoder().decode(ItemList.self, from: Data(body.utf8))
        var states: [String: ItemState] = [:]
        for entry in list.items {
            states[entry.id] = ItemState(
                name: entry.name, quantity: entry.quantity, note: entry.note, deleted: entry.deleted,
                lastModifiedMs: entry.last_modified_ms)
        }
        return states
    }
}
