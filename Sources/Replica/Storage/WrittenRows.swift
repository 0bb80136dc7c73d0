/// The projection rows this log last wrote or read, decoded, so that a batch
/// folding on top of an entity neither reads nor decodes its row again
/// (reading and decoding rows were the largest costs of folding).
///
/// The rows change only when some connection writes pending projections,
/// and every such write moves `meta.projected_offset`. So the entries stay
/// true while `projected_offset` is what this log last saw: `syncPending()`
/// drops them all when it moved otherwise (another connection wrote), and
/// a failed write drops them too. Two generations bound the memory: when the
/// newer one is full it becomes the older one and the oldest entries go.
struct WrittenRows {
    /// One entity's row: its state decoded, the state's text, the key of the
    /// newest event folded in and the entity's chain head.
    struct Entry {
        var stateJSON: String
        var state: any Sendable
        var lastKey: EventOrderKey
        var lastOffset: Int64?
        var holder: String?
    }

    /// Entries per generation; at most twice this many are held. 3,072
    /// caught up 1M events over 20,000 entities as fast as 4,096 and 8,192
    /// did, with 2–3 and 9 MiB less memory at the peak (docs/storage.md "Memory").
    static let generationLimit = 3_072

    private var newer: [Int64: Entry] = [:]
    private var older: [Int64: Entry] = [:]

    /// The row of the entity stored as `entityRow`, if one is held.
    func entry(_ entityRow: Int64) -> Entry? {
        newer[entityRow] ?? older[entityRow]
    }

    /// Records the row of `entityRow` as written or read.
    mutating func store(_ entry: Entry, for entityRow: Int64) {
        if newer.count >= Self.generationLimit, newer[entityRow] == nil {
            older = newer
            newer = [:]
            newer.reserveCapacity(Self.generationLimit)
        }
        newer[entityRow] = entry
    }
}
