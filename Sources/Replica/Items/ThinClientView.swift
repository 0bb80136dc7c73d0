import Foundation

/// What a thin client that knows only the five Item payloads (the seed's
/// phone client) is served in place of an event, as a pure function of
/// the event and its entity's history (docs/relay.md, "Undo").
///
/// An item event it decodes is served as it is. An `Undone` is served,
/// under the undo's own id, time and seq, as the Item event that sets what
/// the undone event had changed to its value in this node's fold just
/// after the undo: `NoteChanged`, `Renamed`, `QuantityChanged` or, for an
/// undone `Created`, `Created` with the name and quantity. The client folds
/// it at the undo's place in the canonical order, so it shows what the mesh
/// shows. An undo of a `Deleted` that brings the item back has no such
/// event (a seed client's deletion is terminal) and is not served; an undo
/// of an undo of a `Deleted` is served as `Deleted`.
enum ThinClientView {
    /// The Item event a thin client is served for `event`, or nil when it
    /// is not served. `history` is the entity's events in canonical order
    /// and holds `event`; it is only read for an undo, and folded on top of
    /// `base`, the entity's checkpoint base when the history is what follows it.
    static func servedEvent(for event: Event, inCanonicalOrder history: [Event], base: EntityBase? = nil) -> ItemEvent?
    {
        guard let undo = UndoneEvent.parse(event.payload) else { return decoded(event.payload) }
        let key = event.orderKey
        let upToUndo = history.filter { $0.orderKey <= key }
        // The event the undo chain ends at: an undo of an undo is about the same field.
        var byID: [UUID: Event] = [:]
        for earlier in upToUndo { byID[earlier.eventID] = earlier }
        var targetID = undo.eventID
        var hops = 0
        while let target = byID[targetID], let inner = UndoneEvent.parse(target.payload), hops < upToUndo.count {
            targetID = inner.eventID
            hops += 1
        }
        guard let target = byID[targetID].flatMap({ decoded($0.payload) }) else { return nil }
        var item =
            base?.state.flatMap { Item(storedState: $0) ?? (try? CanonicalJSON.decode(Item.self, from: $0)) }
            ?? Item(id: event.entityID)
        for applied in Fold.resolve(inCanonicalOrder: upToUndo, startingFrom: base?.session ?? .free).effective {
            guard let decodedEvent = decoded(applied.payload) else { continue }
            item.apply(decodedEvent, info: ModificationInfo(applied))
        }
        switch target {
        case .created: return .created(name: item.name, quantity: item.quantity)
        case .renamed: return .renamed(name: item.name)
        case .quantityChanged: return .quantityChanged(quantity: item.quantity)
        case .noteChanged: return .noteChanged(note: item.note)
        case .deleted: return item.deleted ? .deleted : nil
        }
    }

    /// True when a thin client could decode the event as it is stored.
    static func isServedAsStored(_ event: Event) -> Bool {
        UndoneEvent.parse(event.payload) == nil && decoded(event.payload) != nil
    }

    /// True when `entityID` is what a seed client takes for an item id: a UUID.
    static func isItemID(_ entityID: String) -> Bool { UUID(uuidString: entityID) != nil }

    private static func decoded(_ payload: String) -> ItemEvent? {
        ItemEvent(storedPayload: payload) ?? (try? CanonicalJSON.decode(ItemEvent.self, from: payload))
    }
}
