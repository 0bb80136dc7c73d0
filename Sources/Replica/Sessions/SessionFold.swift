import Foundation

/// Single-writer sessions in the fold: which events of an entity's
/// canonical history apply, given its claims and releases.
///
/// Walking the history in canonical order: a claim that stands (see
/// `SessionState.refusal`) makes its claimant the holder; a release by the
/// holder, or one forced for the holder, frees the entity; while someone
/// holds it, the domain events and undos of every other writer are the
/// entity's *dropped tail*. Requests and refusals change nothing, but only
/// the first answer to a request (in canonical order) counts: a grant of a
/// request answered before does not stand.
enum SessionFold {
    /// An entity's history with the session events taken out.
    struct Resolution {
        /// The domain events and undos the fold goes on with, canonical order kept.
        var kept: [Event] = []
        /// The events another writer's session dropped, in canonical order.
        var dropped: [DroppedEvent] = []
        /// Every claim, with whether it stood.
        var claims: [ClaimOutcome] = []
        /// The session state after the last event.
        var state = SessionState.free
        /// True when the history holds any session event.
        var hasSessions = false
    }

    /// Resolves a history sorted in canonical order, from the session
    /// state `start` (a checkpoint's, for the events after it); of an event
    /// held in two thin-client feeds only the first copy counts (docs/relay.md).
    static func resolve(inCanonicalOrder history: [Event], startingFrom start: SessionState = .free) -> Resolution {
        let history = Fold.withoutRepeatedThinClientCopies(history)
        var resolution = Resolution()
        guard start.holder != nil || history.contains(where: { SessionEvent.mayBe($0.payload) }) else {
            resolution.kept = history
            resolution.state = start
            return resolution
        }
        var state = start
        // Only the first answer to a request counts (two relays cut off from each other may both answer).
        var answered: Set<UUID> = []
        for event in history {
            guard let session = SessionEvent.parse(event.payload) else {
                if let holder = state.holder, !state.applies(event.writer) {
                    resolution.dropped.append(DroppedEvent(event: event, holder: holder))
                } else {
                    resolution.kept.append(event)
                }
                continue
            }
            resolution.hasSessions = true
            switch session {
            case .claimed(let after):
                let refusal = state.refusal(ofClaimBy: event.writer, after: after, isGrant: false)
                resolution.claims.append(
                    ClaimOutcome(
                        event: event, claimant: event.writer, refusal: refusal, previousHolder: state.holder))
                if refusal == nil { state = SessionState(holder: event.writer, claim: event.eventID, granted: false) }
            case .claimGranted(let request, let holder, let after):
                let refusal =
                    answered.insert(request).inserted
                    ? state.refusal(ofClaimBy: holder, after: after, isGrant: true)
                    : "its request was answered before"
                resolution.claims.append(
                    ClaimOutcome(event: event, claimant: holder, refusal: refusal, previousHolder: state.holder))
                if refusal == nil { state = SessionState(holder: holder, claim: event.eventID, granted: true) }
            case .released(let forcedHolder):
                if let holder = state.holder, holder.hasSameUTF8(as: forcedHolder ?? event.writer) { state = .free }
            case .claimRefused(let request, _):
                answered.insert(request)
            case .claimRequested:
                break
            }
        }
        resolution.state = state
        return resolution
    }
}
