/// The feeds a node keeps for thin clients: devices that speak the seed's
/// `POST /events` protocol and keep no gap-free sequence of their own.
///
/// A thin client's events are filed in the feed `<client replica id>@<node
/// replica id>` (in the event's scope), numbered by the node that took
/// them. A replica id with an `@` names such a feed; `peerd init` makes
/// UUIDs, which never hold one.
///
/// ```swift
/// let feed = FeedID(thinClient: "phone-7", node: "5e0f…", scope: "default")   // "phone-7@5e0f…"
/// feed.isThinClient                                                           // true
/// ```
extension FeedID {
    /// What separates the client's replica id from the node's.
    public static let thinClientSeparator: Character = "@"

    /// The feed a node keeps for one thin client.
    public init(thinClient clientReplicaID: String, node nodeReplicaID: String, scope: String = FeedID.defaultScope) {
        self.init(replicaID: clientReplicaID + String(Self.thinClientSeparator) + nodeReplicaID, scope: scope)
    }

    /// True for a feed a node keeps for a thin client.
    public var isThinClient: Bool { replicaID.utf8.contains(UInt8(ascii: "@")) }

    /// The replica whose events the feed carries first-hand, and whose key
    /// signs it: the replica itself, or for a thin-client feed the node that files it.
    public var origin: String {
        // By UTF-8 bytes, as `isThinClient` looks: a search by characters cost
        // a busy node more than a tenth of its CPU (it runs for every feed of
        // every session's pump).
        let bytes = replicaID.utf8
        guard let at = bytes.lastIndex(of: UInt8(ascii: "@")) else { return replicaID }
        return String(replicaID[bytes.index(after: at)...])
    }
}
