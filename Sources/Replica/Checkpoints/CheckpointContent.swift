/// What a checkpoint states about the events it covers: a cursor, each
/// feed's chain link there, and the digests of the entity states those
/// events fold to (docs/protocol.md "Checkpoints"). Anyone who holds the
/// covered events can recompute it; a signature over `encoded` (SyncProtocol's
/// `Checkpoint`) says who stands behind it for those who do not.
///
/// The state at a checkpoint is defined by its chain: the first one
/// (`previous` nil) folds its covered events from nothing; a later one
/// folds the events it covers beyond `previous` on top of `previous`'s
/// bases, in canonical order.
public struct CheckpointContent: Hashable, Sendable {
    /// The id of the checkpoint this one extends; nil for the first.
    public var previous: [UInt8]?
    /// When it was made (Unix ms, the maker's clock): orders a chain.
    public var madeMs: Int64
    /// The replica that computed it.
    public var madeBy: String
    /// The events covered: per feed, seqs 1 through this.
    public var cursor: VectorCursor
    /// Per feed of `cursor`, the chain link at its seq.
    public var links: [FeedID: [UInt8]]
    /// How many entity bases there are.
    public var entityCount: UInt64
    /// `EventLog.stateHash()` of the state at the checkpoint.
    public var stateHash: [UInt8]
    /// SHA-256 over every base's bytes in `(type, id)` order (`EntityBase.encode`).
    public var baseDigest: [UInt8]

    public init(
        previous: [UInt8]?, madeMs: Int64, madeBy: String, cursor: VectorCursor, links: [FeedID: [UInt8]],
        entityCount: UInt64, stateHash: [UInt8], baseDigest: [UInt8]
    ) {
        self.previous = previous
        self.madeMs = madeMs
        self.madeBy = madeBy
        self.cursor = cursor
        self.links = links
        self.entityCount = entityCount
        self.stateHash = stateHash
        self.baseDigest = baseDigest
    }

    static let context = Array("peersync/1 checkpoint".utf8)
    static let format: UInt8 = 1

    /// The bytes that name and are signed: "peersync/1 checkpoint", format
    /// (u8, 1), previous id (32 bytes, zeros for none), made (i64), maker
    /// (text), feed count (u32), per feed in `FeedID` order replica id and
    /// scope (texts), seq (u64) and link (32 bytes), entity count (u64),
    /// state hash (32 bytes), base digest (32 bytes).
    public var encoded: [UInt8] {
        var bytes = Self.context
        bytes.append(Self.format)
        bytes += previous ?? [UInt8](repeating: 0, count: 32)
        ByteLayout.append(bigEndian: UInt64(bitPattern: madeMs), to: &bytes)
        ByteLayout.append(text: madeBy, to: &bytes)
        let feeds = cursor.feeds
        ByteLayout.append(bigEndian: UInt32(feeds.count), to: &bytes)
        for feed in feeds {
            ByteLayout.append(text: feed.replicaID, to: &bytes)
            ByteLayout.append(text: feed.scope, to: &bytes)
            ByteLayout.append(bigEndian: cursor[feed], to: &bytes)
            bytes += links[feed] ?? FeedChain.genesis
        }
        ByteLayout.append(bigEndian: entityCount, to: &bytes)
        bytes += stateHash
        bytes += baseDigest
        return bytes
    }

    /// Reads `encoded` bytes back.
    ///
    /// - Throws: `CheckpointError.malformed`.
    public init(encoded bytes: [UInt8]) throws {
        var reader = ByteLayout.Reader(bytes: bytes, position: 0)
        guard try reader.raw(Self.context.count, "context") == Self.context,
            try reader.raw(1, "format") == [Self.format]
        else { throw CheckpointError.malformed("it does not start with \"peersync/1 checkpoint\" and format 1") }
        let previous = try reader.raw(32, "previous id")
        self.previous = previous.allSatisfy { $0 == 0 } ? nil : previous
        madeMs = Int64(bitPattern: try reader.integer("made time"))
        madeBy = try reader.text("maker")
        var cursor = VectorCursor()
        var links: [FeedID: [UInt8]] = [:]
        var last: FeedID?
        for _ in 0..<(try reader.count("feed count")) {
            let feed = FeedID(replicaID: try reader.text("replica id"), scope: try reader.text("scope"))
            let seq = try reader.integer("seq")
            guard seq > 0, last.map({ $0 < feed }) ?? true else {
                throw CheckpointError.malformed("feed \(feed) is out of order, repeated, or at seq 0")
            }
            last = feed
            cursor[feed] = seq
            links[feed] = try reader.raw(FeedChain.linkSize, "link")
        }
        entityCount = try reader.integer("entity count")
        stateHash = try reader.raw(32, "state hash")
        baseDigest = try reader.raw(32, "base digest")
        guard reader.isAtEnd else {
            throw CheckpointError.malformed("\(bytes.count - reader.position) bytes follow it")
        }
        self.cursor = cursor
        self.links = links
    }

    /// The checkpoint's id: the SHA-256 of `encoded`.
    public var id: [UInt8] {
        var hash = SHA256()
        hash.update(encoded)
        return hash.finalize()
    }

    /// True when `event` is one of the events it covers.
    public func covers(_ event: Event) -> Bool { event.seq <= cursor[event.feed] }
}
