import Foundation

/// An event a thin client pushes (`POST /events`): its own id, replica id,
/// time and payload, but no seq the node could use; the node files it in
/// the client's feed (``FeedID/init(thinClient:node:scope:)``).
///
/// ```swift
/// let pushed = ThinClientEvent(eventID: UUID(), clientReplicaID: "phone-7", timeMs: 1_700_000_000_000,
///                              entityID: itemID, payload: #"{"type":"Renamed","name":"Nuts"}"#)
/// let stored = try log.acceptThinClientEvents([pushed])   // [StoredEvent], one per input
/// ```
public struct ThinClientEvent: Hashable, Sendable {
    /// The client's event id: what makes a retried push store nothing twice.
    public var eventID: UUID
    /// The client's own replica id (`replica_id` on the wire).
    public var clientReplicaID: String
    public var scope: String
    /// The client's `replica_time_ms`, the event's place in the canonical order.
    public var timeMs: Int64
    public var entityType: String
    public var entityID: String
    /// A JSON object; stored in canonical form.
    public var payload: String

    public init(
        eventID: UUID, clientReplicaID: String, scope: String = FeedID.defaultScope, timeMs: Int64,
        entityType: String = Item.entityType, entityID: String, payload: String
    ) {
        self.eventID = eventID
        self.clientReplicaID = clientReplicaID
        self.scope = scope
        self.timeMs = timeMs
        self.entityType = entityType
        self.entityID = entityID
        self.payload = payload
    }
}

/// A thin client's batch was refused because of one of its events; nothing
/// of the batch was stored.
public struct ThinClientBatchError: Error, CustomStringConvertible, Sendable {
    /// The position of the refused event in the batch, from 0.
    public var index: Int
    public var reason: String
    /// Set when the event fits but sits in another scope than its type's
    /// declaration names (`EventLogError.wrongScope`).
    public var wrongScope = false

    public init(index: Int, reason: String, wrongScope: Bool = false) {
        self.index = index
        self.reason = reason
        self.wrongScope = wrongScope
    }

    public var description: String { "event \(index): \(reason)" }
}
