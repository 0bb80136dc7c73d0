import Foundation

/// The outcome of folding events into one entity's projection.
struct FoldOutcome {
    /// The projection's canonical JSON.
    var stateJSON: String
    /// Events whose payload the domain could not decode.
    var poisonEventIDs: [UUID]
    /// The folded state itself (the domain's `EventSourcedEntity`), so that
    /// the next fold on top of `stateJSON` need not decode it again.
    var state: any Sendable
}

/// A type-erased `EventSourcedEntity`, as the event log stores and folds it.
public struct Domain: Sendable {
    /// The `entity_type` this domain folds.
    public let entityType: String
    let foldEvents:
        @Sendable (_ entityID: String, _ stateJSON: String?, _ decoded: (any Sendable)?, _ events: [Event]) ->
            FoldOutcome
    let validatePayload: @Sendable (_ payload: JSONValue) throws -> Void

    /// Wraps a concrete domain.
    public init<Entity: EventSourcedEntity>(_ type: Entity.Type) {
        entityType = Entity.entityType
        foldEvents = { entityID, stateJSON, decoded, events in
            var state: Entity
            if let decoded = decoded as? Entity {
                state = decoded
            } else {
                state =
                    stateJSON.flatMap { try? CanonicalJSON.decode(Entity.self, from: $0) } ?? Entity(id: entityID)
            }
            var poison: [UUID] = []
            for event in events {
                guard let decoded = try? CanonicalJSON.decode(Entity.Event.self, from: event.payload) else {
                    poison.append(event.eventID)
                    continue
                }
                state.apply(decoded, info: ModificationInfo(event))
            }
            return FoldOutcome(stateJSON: CanonicalJSON.text(of: state), poisonEventIDs: poison, state: state)
        }
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

    /// Folds `events` (in canonical order, undone ones already removed) on
    /// top of `stateJSON`, or of `decoded` when the caller still holds that
    /// text decoded (a state the last fold returned for exactly that text).
    func fold(entityID: String, from stateJSON: String?, decoded: (any Sendable)? = nil, _ events: [Event])
        -> FoldOutcome
    {
        foldEvents(entityID, stateJSON, decoded, events)
    }
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
