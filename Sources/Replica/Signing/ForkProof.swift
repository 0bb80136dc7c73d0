/// Proof that a feed's origin signed two histories: its signed head `held`,
/// and its signed head `other` whose chain, from `otherBaseLink` through
/// `otherEvents`, passes `held.seq` with another link. Anyone holding the
/// origin's key can check it; every replica that does stops taking and
/// serving the feed (docs/protocol.md "Fork proofs").
///
/// When both heads are at one seq, `otherEvents` is empty and
/// `otherBaseLink` is `other.link`.
public struct ForkProof: Hashable, Sendable {
    public var held: SignedHead
    public var other: SignedHead
    /// The link of `other`'s chain before its first event.
    public var otherBaseLink: [UInt8]
    /// `other`'s events up to its head, in seq order.
    public var otherEvents: [Event]

    public init(held: SignedHead, other: SignedHead, otherBaseLink: [UInt8], otherEvents: [Event]) {
        self.held = held
        self.other = other
        self.otherBaseLink = otherBaseLink
        self.otherEvents = otherEvents
    }

    public var feed: FeedID { other.feed }

    /// The seq `otherBaseLink` is the link at.
    public var otherBaseSeq: UInt64 {
        other.seq >= UInt64(otherEvents.count) ? other.seq - UInt64(otherEvents.count) : 0
    }

    /// Whether it proves an equivocation of a replica holding one of `keys`.
    public func proves(keys: [[UInt8]]) -> Bool {
        guard held.feed == other.feed, UInt64(otherEvents.count) <= other.seq,
            held.seq >= otherBaseSeq, held.seq <= other.seq,
            held.isSigned(byOneOf: keys), other.isSigned(byOneOf: keys)
        else { return false }
        var link = otherBaseLink
        var linkAtHeld: [UInt8]? = held.seq == otherBaseSeq ? link : nil
        for (index, event) in otherEvents.enumerated() {
            guard event.feed == feed, event.seq == otherBaseSeq + 1 + UInt64(index) else { return false }
            link = FeedChain.link(after: link, event)
            if event.seq == held.seq { linkAtHeld = link }
        }
        return link == other.link && linkAtHeld != held.link
    }
}
