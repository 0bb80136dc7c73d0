import Foundation

/// A type-erased `EventSourcedEntity`, as the event log stores and folds it.
///
/// Folding is split in three so that the log can apply many batches to a
/// state in memory and encode it once, when it writes the projection row:
/// `initialState` (decode the stored text, or start empty), `apply`, `encode`.
public struct Domain: Sendable {
    /// The `entity_type` this domain folds.
    public let entityType: String
    let decodeState: @Sendable (_ entityID: String, _ stateJSON: String?) -> any Sendable
    let applyEvents: @Sendable (_ state: any Sendable, _ events: [Event], _ poison: inout [UUID]) -> any Sendable
    let encodeState: @Sendable (_ state: any Sendable) -> String
    let validatePayload: @Sendable (_ payload: JSONValue) throws -> Void
    let decodesFast: @Sendable (_ payload: String) -> Bool
    /// The compiled declaration of a declared domain (docs/domains.md); nil for a Swift one.
    public let plan: FoldPlan?

    /// Wraps a concrete domain. Its events decode and its states encode
    /// through `Codable`, unless it is one of this module's hot domains
    /// (`FastFoldingEntity`), whose own fast paths are used instead.
    public init<Entity: EventSourcedEntity>(_ type: Entity.Type) {
        if let fast = type as? any FastFoldingEntity.Type {
            self.init(fastFolding: fast)
        } else {
            self.init(
                type,
                applyEvents: { state, events, poison in
                    // The log only hands back states this domain made.
                    var entity = state as! Entity
                    for event in events {
                        guard let decoded = try? CanonicalJSON.decode(Entity.Event.self, from: event.payload) else {
                            poison.append(event.eventID)
                            continue
                        }
                        entity.apply(decoded, info: ModificationInfo(event))
                    }
                    return entity
                },
                decodeState: { json in try? CanonicalJSON.decode(Entity.self, from: json) },
                encodeState: { state in CanonicalJSON.text(of: state as! Entity) },
                decodesFast: { _ in false })
        }
    }

    /// Wraps a hot domain: a stored payload is decoded by
    /// `decodeStoredEvent` first, by `Codable` when that gives nil, and a
    /// state is written by `canonicalJSON`.
    init<Entity: FastFoldingEntity>(fastFolding type: Entity.Type) {
        self.init(
            type,
            applyEvents: { state, events, poison in
                // The log only hands back states this domain made.
                var entity = state as! Entity
                for event in events {
                    guard
                        let decoded = Entity.decodeStoredEvent(event.payload)
                            ?? (try? CanonicalJSON.decode(Entity.Event.self, from: event.payload))
                    else {
                        poison.append(event.eventID)
                        continue
                    }
                    entity.apply(decoded, info: ModificationInfo(event))
                }
                return entity
            },
            decodeState: { json in Entity(storedState: json) ?? (try? CanonicalJSON.decode(Entity.self, from: json)) },
            encodeState: { state in (state as! Entity).canonicalJSON },
            decodesFast: { payload in Entity.decodeStoredEvent(payload) != nil })
    }

    /// The parts every domain shares, around the four that a hot domain
    /// does its own way.
    private init<Entity: EventSourcedEntity>(
        _ type: Entity.Type,
        applyEvents:
            @escaping @Sendable (_ state: any Sendable, _ events: [Event], _ poison: inout [UUID]) -> any Sendable,
        decodeState: @escaping @Sendable (_ stateJSON: String) -> Entity?,
        encodeState: @escaping @Sendable (_ state: any Sendable) -> String,
        decodesFast: @escaping @Sendable (_ payload: String) -> Bool
    ) {
        entityType = Entity.entityType
        plan = nil
        self.decodeState = { entityID, stateJSON in
            stateJSON.flatMap(decodeState) ?? Entity(id: entityID)
        }
        self.applyEvents = applyEvents
        self.encodeState = encodeState
        self.decodesFast = decodesFast
        validatePayload = { payload in
            do {
                _ = try JSONValueDecoder.decode(Entity.Event.self, from: payload)
            } catch {
                throw EventLogError.invalidEvent(
                    "payload \(payload.canonicalText) is not a valid \(Entity.entityType) event: "
                        + "\(DecodingFailure(error))")
            }
        }
    }

    /// True when `payload` decodes as one of this domain's events.
    func decodes(_ payload: String) -> Bool {
        guard let value = try? JSONValue.parse(payload) else { return false }
        return (try? validatePayload(value)) != nil
    }

    /// True when the domain's fast path (`FastFoldingEntity.decodeStoredEvent`)
    /// decodes `payload`, which then decodes as one of its events; false says
    /// nothing (and is all a domain without fast paths answers).
    func decodesStoredEvent(_ payload: String) -> Bool {
        decodesFast(payload)
    }

    /// The state stored as `stateJSON`, or the empty state when there is none.
    func state(entityID: String, from stateJSON: String?) -> any Sendable {
        decodeState(entityID, stateJSON)
    }

    /// Applies `events` (canonical order, undone ones already removed) to
    /// `state`; the ids of events whose payload does not decode are added
    /// to `poison` and the events skipped.
    func apply(_ events: [Event], to state: any Sendable, poison: inout [UUID]) -> any Sendable {
        applyEvents(state, events, &poison)
    }

    /// The canonical JSON of a state this domain made.
    func encode(_ state: any Sendable) -> String {
        encodeState(state)
    }
}

/// A domain of this module with fast paths for the fold's hot loop, which
/// `Domain.init` uses when the entity conforms. An app's domains do not see
/// this: they implement `EventSourcedEntity` and fold through `Codable`.
///
/// Each must agree with `Codable` byte for byte (`FastFoldPathTests` check
/// `Item`'s): a replica that decoded a payload or encoded a state differently
/// would report a different state hash.
protocol FastFoldingEntity: EventSourcedEntity {
    /// The event in a stored (canonical) payload, or nil to let `Codable`
    /// decode it. It must never decode a payload differently than `Codable`
    /// would.
    static func decodeStoredEvent(_ payload: String) -> Event?
    /// The state's canonical JSON, exactly `CanonicalJSON.text(of: self)`,
    /// written directly.
    var canonicalJSON: String { get }
    /// The state in a stored projection (its `canonicalJSON`), or nil to let
    /// `Codable` decode it. It must never decode a state differently than
    /// `Codable` would.
    init?(storedState json: String)
}

/// A short, readable reason for a JSON decoding failure.
struct DecodingFailure: CustomStringConvertible {
    let error: Error
    init(_ error: Error) { self.error = error }

    var description: String {
        switch error {
        case DecodingError.dataCorrupted(let context): return context.debugDescription
        case DecodingError.keyNotFound(let key, _): return "missing field \"\(key.stringValue)\""
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context):
            let path = context.codingPath.map(\.stringValue).joined(separator: ".")
            return "wrong type for \"\(path)\""
        default: return "\(error)"
        }
    }
}
