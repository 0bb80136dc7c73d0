import Foundation

/// A feed: every event of one origin replica in one scope, numbered 1, 2, 3, ...
///
/// A replica only appends to its own feeds, and every replica holds a
/// gap-free prefix of each feed it knows.
public struct FeedID: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The replica that writes this feed.
    public var replicaID: String { didSet { digest = Self.digest(replicaID, scope) } }
    /// The share the feed belongs to (`default` unless set).
    public var scope: String { didSet { digest = Self.digest(replicaID, scope) } }
    /// Both ids' bytes hashed once (with this process's seed): a cursor's
    /// dictionary is looked up for every message of every session, and
    /// hashing two strings each time was a tenth of a busy relay's CPU.
    private var digest: Int

    public init(replicaID: String, scope: String = FeedID.defaultScope) {
        self.replicaID = replicaID
        self.scope = scope
        digest = Self.digest(replicaID, scope)
    }

    private static func digest(_ replicaID: String, _ scope: String) -> Int {
        var hasher = Hasher()
        hasher.combine(bytes: replicaID.utf8)
        hasher.combine(bytes: scope.utf8)
        return hasher.finalize()
    }

    /// The scope of events that do not name one.
    public static let defaultScope = "default"

    /// Replica ids beginning with this are the protocol's own (its
    /// capability declarations, docs/protocol.md): no replica may take one.
    public static let reservedReplicaIDPrefix = "peersync/"

    /// True for a replica id the protocol keeps for itself.
    public static func isReserved(replicaID: String) -> Bool {
        replicaID.utf8.starts(with: reservedReplicaIDPrefix.utf8)
    }

    // Identity and order are by UTF-8 bytes, as SQLite compares them: Swift's
    // `String ==` would merge ids that differ only in Unicode normalization.
    public static func == (lhs: FeedID, rhs: FeedID) -> Bool {
        lhs.digest == rhs.digest && lhs.replicaID.hasSameUTF8(as: rhs.replicaID) && lhs.scope.hasSameUTF8(as: rhs.scope)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(digest)
    }

    public static func < (lhs: FeedID, rhs: FeedID) -> Bool {
        if !lhs.replicaID.utf8.elementsEqual(rhs.replicaID.utf8) {
            return lhs.replicaID.utf8.lexicographicallyPrecedes(rhs.replicaID.utf8)
        }
        return lhs.scope.utf8.lexicographicallyPrecedes(rhs.scope.utf8)
    }

    public var description: String { "\(replicaID)/\(scope)" }
}

extension Hasher {
    /// Feeds the UTF-8 bytes of a string and a terminator, so that ids are
    /// hashed as the bytes SQLite stores.
    mutating func combine(bytes: String.UTF8View) {
        let contiguous: Void? = bytes.withContiguousStorageIfAvailable { combine(bytes: UnsafeRawBufferPointer($0)) }
        if contiguous == nil { Array(bytes).withUnsafeBytes { combine(bytes: $0) } }
        combine(0xFF as UInt8)
    }
}

extension String {
    /// True when both strings have the same UTF-8 bytes (`==` would also
    /// call strings equal that differ only in Unicode normalization).
    func hasSameUTF8(as other: String) -> Bool {
        let same = utf8.withContiguousStorageIfAvailable { mine in
            other.utf8.withContiguousStorageIfAvailable { theirs in
                mine.count == theirs.count
                    && (mine.isEmpty || memcmp(mine.baseAddress!, theirs.baseAddress!, mine.count) == 0)
            }
        }
        return (same ?? nil) ?? utf8.elementsEqual(other.utf8)
    }
}
