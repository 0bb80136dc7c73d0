import Foundation

@testable import Replica

/// Builders for the events and logs the tests share.
enum Fixtures {
    /// An item event as another replica would send it.
    static func itemEvent(
        _ replicaID: String, seq: UInt64, time: Int64, item: String, _ event: ItemEvent,
        eventID: UUID = UUID()
    ) -> Event {
        Event(
            eventID: eventID, feed: FeedID(replicaID: replicaID), seq: seq, timeMs: time,
            entityType: Item.entityType, entityID: item, payload: event.payload)
    }

    /// An event with any entity type and payload text.
    static func rawEvent(
        _ replicaID: String, seq: UInt64, time: Int64, type: String = Item.entityType, entity: String,
        payload: String, eventID: UUID = UUID()
    ) -> Event {
        Event(
            eventID: eventID, feed: FeedID(replicaID: replicaID), seq: seq, timeMs: time,
            entityType: type, entityID: entity, payload: payload)
    }

    /// An `Undone` payload that cancels `target`.
    static func undonePayload(_ target: UUID) -> String {
        CanonicalJSON.text(of: UndoneEvent(eventID: target))
    }

    /// Every event `log` holds, in arrival order.
    static func allEvents(_ log: EventLog) throws -> [StoredEvent] {
        try log.events(after: 0, limit: Int.max)
    }

    /// The events of `log`'s own feed, in seq order: what it has to offer as an origin.
    static func ownEvents(_ log: EventLog) throws -> [Event] {
        try allEvents(log).map(\.event).filter { $0.feed.replicaID == log.replicaID }.sorted { $0.seq < $1.seq }
    }
}
