import Foundation

/// Who holds an entity at one point of its canonical history.
public struct SessionState: Sendable, Hashable {
    /// The writer whose events alone the fold applies; nil: free.
    public var holder: String?
    /// The event that made `holder` the holder (a `Claimed` or a `ClaimGranted`).
    public var claim: UUID?
    /// True when a relay granted the claim: only another grant takes it over.
    public var granted: Bool

    public init(holder: String? = nil, claim: UUID? = nil, granted: Bool = false) {
        self.holder = holder
        self.claim = claim
        self.granted = granted
    }

    /// No one holds the entity.
    public static let free = SessionState()

    /// True when `writer`'s domain events apply now.
    func applies(_ writer: String) -> Bool {
        guard let holder else { return true }
        return holder.hasSameUTF8(as: writer)
    }

    /// Whether a claim for `claimant` that names `after` as the claim it
    /// takes over would stand now; nil when it would, else why not.
    ///
    /// A claim stands when the entity is free, already the claimant's, or
    /// held by exactly the claim it names (a deliberate takeover). Only a
    /// grant takes over a granted claim; a grant takes over any optimistic one.
    public func refusal(ofClaimBy claimant: String, after: UUID?, isGrant: Bool) -> String? {
        guard let holder else { return nil }
        if holder.hasSameUTF8(as: claimant) { return nil }
        if granted && !isGrant { return "\(holder) holds it by a relay's grant" }
        if isGrant && !granted { return nil }
        if let after, after == claim { return nil }
        return "\(holder) holds it"
    }
}

/// One event the fold did not apply because another writer held the entity.
public struct DroppedEvent: Sendable, Hashable {
    /// The event, as this replica holds it.
    public var event: Event
    /// The holder at the event's place in the canonical order.
    public var holder: String

    public init(event: Event, holder: String) {
        self.event = event
        self.holder = holder
    }
}

/// One claim (a `Claimed` or a `ClaimGranted`) and whether it stood.
public struct ClaimOutcome: Sendable, Hashable {
    /// The claim event.
    public var event: Event
    /// The writer it would make holder.
    public var claimant: String
    /// Nil when the claim stood, else why it did not.
    public var refusal: String?
    /// Who held the entity just before the claim.
    public var previousHolder: String?

    /// True when the claim stood and took the entity from `writer`.
    public func tookOver(from writer: String) -> Bool {
        refusal == nil && previousHolder.map { $0.hasSameUTF8(as: writer) } == true
            && !claimant.hasSameUTF8(as: writer)
    }
}
