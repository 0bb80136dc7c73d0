import Foundation

/// An immutable fact about one entity, as every replica stores it.
///
/// ```swift
/// let event = Event(eventID: UUID(), feed: FeedID(replicaID: "r1"), seq: 1, timeMs: 1_700_000_000_000,
///                   entityType: "item", entityID: "i1", payload: #"{"type":"Deleted"}"#)
/// ```
public struct Event: Hashable, Sendable {
    /// Globally unique; the idempotency key everywhere.
    public var eventID: UUID
    /// The origin replica and scope.
    public var feed: FeedID
    /// Position in its feed: 1, 2, 3, ... without gaps.
    public var seq: UInt64
    /// Hybrid-logical-clock time at the origin, about wall-clock milliseconds.
    public var timeMs: Int64
    /// The kind of entity, e.g. `item`.
    public var entityType: String
    /// The entity the event is about.
    public var entityID: String
    /// The domain event as a JSON object in canonical text (sorted keys).
    public var payload: String

    public init(
        eventID: UUID, feed: FeedID, seq: UInt64, timeMs: Int64,
        entityType: String, entityID: String, payload: String
    ) {
        self.eventID = eventID
        self.feed = feed
        self.seq = seq
        self.timeMs = timeMs
        self.entityType = entityType
        self.entityID = entityID
        self.payload = payload
    }

    /// The event's place in the canonical order every replica folds in.
    public var orderKey: EventOrderKey { EventOrderKey(timeMs: timeMs, seq: seq, eventID: eventID) }
}

/// An event as one replica holds it: with its local arrival offset and time.
///
/// `offset` and `arrivalTimeMs` are this node's (on a relay, its server
/// offset and time); they are not part of the event's identity.
public struct StoredEvent: Hashable, Sendable {
    public var event: Event
    /// Local arrival order, 1, 2, 3, ... on this replica.
    public var offset: Int64
    /// This replica's wall-clock time when the event was stored.
    public var arrivalTimeMs: Int64

    public init(event: Event, offset: Int64, arrivalTimeMs: Int64) {
        self.event = event
        self.offset = offset
        self.arrivalTimeMs = arrivalTimeMs
    }
}

/// The canonical order of events: `(time_ms, seq, event_id)`, event ids
/// compared as lowercase hex strings.
public struct EventOrderKey: Hashable, Comparable, Sendable {
    public var timeMs: Int64
    public var seq: UInt64
    public var eventID: UUID

    public init(timeMs: Int64, seq: UInt64, eventID: UUID) {
        self.timeMs = timeMs
        self.seq = seq
        self.eventID = eventID
    }

    public static func < (lhs: EventOrderKey, rhs: EventOrderKey) -> Bool {
        if lhs.timeMs != rhs.timeMs { return lhs.timeMs < rhs.timeMs }
        if lhs.seq != rhs.seq { return lhs.seq < rhs.seq }
        // Byte order of a UUID is the order of its lowercase hex string.
        return lhs.eventID.orderedBytes.lexicographicallyPrecedes(rhs.eventID.orderedBytes)
    }
}

extension UUID {
    /// The 16 bytes of the UUID, in the order its hex string prints them.
    var orderedBytes: [UInt8] {
        withUnsafeBytes(of: uuid) { Array($0) }
    }

    init?(bytes: [UInt8]) {
        guard bytes.count == 16 else { return nil }
        let tuple = bytes.withUnsafeBytes { $0.loadUnaligned(as: uuid_t.self) }
        self.init(uuid: tuple)
    }

    /// A random (version 4) UUID from the system's generator.
    /// (`UUID()` opens /dev/urandom on every call here, a measurable cost per append.)
    static func random() -> UUID {
        var generator = SystemRandomNumberGenerator()
        var bytes = withUnsafeBytes(of: (generator.next() as UInt64, generator.next() as UInt64)) { Array($0) }
        bytes[6] = (bytes[6] & 0x0F) | 0x40
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        return UUID(bytes: bytes)!
    }

    /// The lowercase textual form used on the wire and in exports.
    var lowercased: String { uuidString.lowercased() }
}
