import Foundation

/// Where and when the event being applied was made.
public struct ModificationInfo: Sendable, Hashable {
    public var eventID: UUID
    public var replicaID: String
    public var seq: UInt64
    public var timeMs: Int64

    public init(eventID: UUID, replicaID: String, seq: UInt64, timeMs: Int64) {
        self.eventID = eventID
        self.replicaID = replicaID
        self.seq = seq
        self.timeMs = timeMs
    }

    init(_ event: Event) {
        self.init(eventID: event.eventID, replicaID: event.feed.replicaID, seq: event.seq, timeMs: event.timeMs)
    }
}

/// A domain whose state is a fold of its events in canonical order.
///
/// The state is stored as its canonical JSON encoding, so it must be
/// `Codable`; equal states must encode to equal text. Payloads decode and
/// states encode through `Codable` (`CanonicalJSON`); register the domain
/// in `EventLog.Options.domains` as `Domain(MyEntity.self)`.
///
/// ```swift
/// struct Counter: EventSourcedEntity {
///     enum Event: Codable, Sendable { case add(Int64) }
///     static let entityType = "counter"
///     var id: String
///     var total: Int64 = 0
///     init(id: String) { self.id = id }
///     mutating func apply(_ event: Event, info: ModificationInfo) {
///         if case .add(let n) = event { total += n }
///     }
/// }
/// ```
public protocol EventSourcedEntity: Codable, Sendable, Equatable {
    /// The domain events, decoded from an event's JSON payload.
    associatedtype Event: Codable & Sendable
    /// The `entity_type` this domain folds.
    static var entityType: String { get }
    /// The state before any event.
    init(id: String)
    /// Given the current state and one event, produce the next state.
    mutating func apply(_ event: Event, info: ModificationInfo)
}

/// The generic `Undone {event_id}` event: the fold skips its target.
public struct UndoneEvent: Codable, Sendable, Hashable {
    /// The payload `type` of an undo.
    public static let type = "Undone"
    public var type: String = UndoneEvent.type
    /// The event this one cancels.
    public var eventID: UUID

    public init(eventID: UUID) { self.eventID = eventID }

    enum CodingKeys: String, CodingKey {
        case type
        case eventID = "event_id"
    }

    /// Writes the event id in lowercase, like every id on the wire.
    public func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(type, forKey: .type)
        try container.encode(eventID.uuidString.lowercased(), forKey: .eventID)
    }

    private static let marker = Array(#""Undone""#.utf8)

    /// The undo in `payload`, or nil when the payload is something else.
    static func parse(_ payload: String) -> UndoneEvent? {
        // Cheap test first: most payloads are not undos.
        guard payload.utf8.contains(subsequence: UndoneEvent.marker) else { return nil }
        guard let undo = try? CanonicalJSON.decode(UndoneEvent.self, from: payload),
            undo.type == UndoneEvent.type
        else { return nil }
        return undo
    }
}

extension String.UTF8View {
    /// True when `needle` occurs in these bytes. (`String.contains` goes
    /// through Foundation's locale-aware search, far slower on a hot path.)
    func contains(subsequence needle: [UInt8]) -> Bool {
        guard let first = needle.first else { return true }
        let found = withContiguousStorageIfAvailable { bytes in
            Self.find(needle, first: first, in: UnsafeRawBufferPointer(bytes))
        }
        return found ?? Array(self).withUnsafeBytes { Self.find(needle, first: first, in: $0) }
    }

    /// `memchr` to each candidate first byte, then a compare.
    private static func find(_ needle: [UInt8], first: UInt8, in bytes: UnsafeRawBufferPointer) -> Bool {
        guard let base = bytes.baseAddress, bytes.count >= needle.count else { return false }
        var start = 0
        let lastStart = bytes.count - needle.count
        while start <= lastStart {
            guard let hit = memchr(base + start, Int32(first), lastStart - start + 1) else { return false }
            let position = base.distance(to: UnsafeRawPointer(hit))
            if needle.withUnsafeBytes({ memcmp(base + position, $0.baseAddress!, needle.count) == 0 }) { return true }
            start = position + 1
        }
        return false
    }
}
