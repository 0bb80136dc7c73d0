/// A feed: every event of one origin replica in one scope, numbered 1, 2, 3, ...
///
/// A replica only appends to its own feeds, and every replica holds a
/// gap-free prefix of each feed it knows.
public struct FeedID: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The replica that writes this feed.
    public var replicaID: String
    /// The share the feed belongs to (`default` unless set).
    public var scope: String

    public init(replicaID: String, scope: String = FeedID.defaultScope) {
        self.replicaID = replicaID
        self.scope = scope
    }

    /// The scope of events that do not name one.
    public static let defaultScope = "default"

    public static func < (lhs: FeedID, rhs: FeedID) -> Bool {
        (lhs.replicaID, lhs.scope) < (rhs.replicaID, rhs.scope)
    }

    public var description: String { "\(replicaID)/\(scope)" }
}
