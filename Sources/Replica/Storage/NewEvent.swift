/// An event a local writer asks the log to append; the log assigns its
/// `event_id`, `seq` and `time_ms`.
public struct NewEvent: Sendable, Hashable {
    public var entityType: String
    public var entityID: String
    /// A JSON object; stored in canonical form.
    public var payload: String
    public var scope: String

    public init(entityType: String, entityID: String, payload: String, scope: String = FeedID.defaultScope) {
        self.entityType = entityType
        self.entityID = entityID
        self.payload = payload
        self.scope = scope
    }

    /// An Item domain event.
    ///
    /// ```swift
    /// try log.append(NewEvent(item: "i1", .quantityChanged(quantity: 8)))
    /// ```
    public init(item id: String, _ event: ItemEvent, scope: String = FeedID.defaultScope) {
        self.init(entityType: Item.entityType, entityID: id, payload: event.payload, scope: scope)
    }
}
