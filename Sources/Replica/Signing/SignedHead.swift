/// A feed's head as its origin vouches for it: the seq, the chain link
/// there, and the origin's signature over `FeedChain.headMessage`.
public struct SignedHead: Hashable, Sendable {
    public var feed: FeedID
    public var seq: UInt64
    public var link: [UInt8]
    /// `nil` for a head no key signed (a database from before signed feeds).
    public var signature: [UInt8]?

    public init(feed: FeedID, seq: UInt64, link: [UInt8], signature: [UInt8]?) {
        self.feed = feed
        self.seq = seq
        self.link = link
        self.signature = signature
    }

    /// What the signature signs.
    public var message: [UInt8] { FeedChain.headMessage(feed: feed, seq: seq, link: link) }

    /// Whether one of `keys` signed it.
    public func isSigned(byOneOf keys: [[UInt8]]) -> Bool {
        guard let signature else { return false }
        let message = message
        return keys.contains { FeedChain.verify(signature: signature, of: message, publicKey: $0) }
    }
}

/// What a receiver needs to verify one feed's events in a batch: the link
/// before the first of them (`baseLink`) and the origin's signed head at
/// the last (`head`).
public struct FeedProof: Hashable, Sendable {
    public var baseLink: [UInt8]
    public var head: SignedHead

    public init(baseLink: [UInt8], head: SignedHead) {
        self.baseLink = baseLink
        self.head = head
    }
}

/// The identity keys that may sign each origin's feeds, by origin replica
/// id (a thin-client feed's origin is the node that files it).
public struct FeedKeys: Hashable, Sendable {
    public var keys: [String: [[UInt8]]]
    /// Per origin replica id: only its events with `time_ms` below this are
    /// stored (the admin revoked it then); a verified run is cut there.
    public var validBeforeMs: [String: Int64] = [:]

    public init(_ keys: [String: [[UInt8]]] = [:]) {
        self.keys = keys
    }

    /// The keys of the replica that signs `feed`.
    public func keys(for feed: FeedID) -> [[UInt8]] { keys[feed.origin] ?? [] }

    /// Adds a key for an origin; false when it was known.
    @discardableResult
    public mutating func add(_ key: [UInt8], for origin: String) -> Bool {
        guard !(keys[origin]?.contains(key) ?? false) else { return false }
        keys[origin, default: []].append(key)
        return true
    }
}
