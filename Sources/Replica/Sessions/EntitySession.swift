import Foundation

/// Everything sessions decided for one entity, as this replica's history
/// shows it: the same on every replica that holds the same events.
public struct EntitySession: Sendable, Hashable {
    /// The entity's type and id.
    public var entityType: String
    public var entityID: String
    /// Who holds it now.
    public var state: SessionState
    /// Every claim and grant, canonical order, with whether it stood.
    public var claims: [ClaimOutcome]
    /// Every request for a relay's grant, with its answer once there is one.
    public var requests: [ClaimRequest]
    /// The entity's dropped tail: the events sessions did not apply.
    public var dropped: [DroppedEvent]

    /// True when the entity's holder took it from `writer`'s session,
    /// directly or through a chain of takeovers with no release between:
    /// `writer` was taken over (rather than the entity being free since).
    public func tookOver(from writer: String) -> Bool {
        var lost = false
        for claim in claims where claim.refusal == nil {
            if claim.claimant.hasSameUTF8(as: writer) || claim.previousHolder == nil {
                lost = false
            } else if claim.previousHolder.map({ $0.hasSameUTF8(as: writer) }) == true {
                lost = true
            }
        }
        return lost && state.holder.map { !$0.hasSameUTF8(as: writer) } == true
    }

    /// How many events of `writer` sessions dropped.
    public func droppedCount(of writer: String) -> Int {
        dropped.filter { $0.event.writer.hasSameUTF8(as: writer) }.count
    }

    /// The request with event id `id`, if this replica holds it.
    public func request(_ id: UUID) -> ClaimRequest? {
        requests.first { $0.event.eventID == id }
    }
}

/// A `ClaimRequested` and the relay's answer to it.
public struct ClaimRequest: Sendable, Hashable {
    /// The request.
    public var event: Event
    /// The `ClaimGranted` or `ClaimRefused` answering it; nil while none arrived.
    public var answer: Event?
    /// For a grant: whether it stood in the fold (a grant of another relay
    /// cut off from this one may have taken the entity first).
    public var grantStood: Bool?
}

extension EntitySession {
    /// Builds the report from an entity's history in canonical order, after
    /// the session state `start` (a checkpoint's; free for a whole history).
    init(entityType: String, entityID: String, history: [Event], startingFrom start: SessionState = .free) {
        let resolution = SessionFold.resolve(inCanonicalOrder: history, startingFrom: start)
        var requests: [ClaimRequest] = []
        var answers: [UUID: Event] = [:]
        for event in history {
            switch SessionEvent.parse(event.payload) {
            case .claimRequested: requests.append(ClaimRequest(event: event))
            case .claimGranted(let request, _, _), .claimRefused(let request, _):
                if answers[request] == nil { answers[request] = event }
            default: break
            }
        }
        let stood = Dictionary(
            resolution.claims.map { ($0.event.eventID, $0.refusal == nil) }, uniquingKeysWith: { first, _ in first })
        for index in requests.indices {
            guard let answer = answers[requests[index].event.eventID] else { continue }
            requests[index].answer = answer
            requests[index].grantStood = stood[answer.eventID]
        }
        self.init(
            entityType: entityType, entityID: entityID, state: resolution.state, claims: resolution.claims,
            requests: requests, dropped: resolution.dropped)
    }
}
