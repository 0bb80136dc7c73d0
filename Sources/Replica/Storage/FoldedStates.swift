/// Decoded projection states kept between write transactions, so that a
/// batch that folds on top of an entity's projection does not decode the
/// stored JSON again (the largest single cost of folding before).
///
/// An entry is only a shortcut for decoding: it is used when the stored
/// `state` text is byte for byte the text it was made for, so a write by
/// another connection, a refold or a rolled-back transaction can at worst
/// cost a miss, never a wrong state. (The log also drops every entry when a
/// write fails.) Two generations bound the memory: when the newer one is
/// full it becomes the older one and the oldest entries go.
struct FoldedStates {
    /// A state and the canonical text it encodes to.
    struct Entry {
        var stateJSON: String
        var state: any Sendable
    }

    /// Entries per generation; at most twice this many are held.
    static let generationLimit = 8_192

    private var newer: [Int64: Entry] = [:]
    private var older: [Int64: Entry] = [:]

    /// The entry of the entity stored as `entityRow`, if one is held.
    func entry(_ entityRow: Int64) -> Entry? {
        newer[entityRow] ?? older[entityRow]
    }

    /// Records the state just folded for `entityRow`.
    mutating func store(_ entry: Entry, for entityRow: Int64) {
        if newer.count >= Self.generationLimit, newer[entityRow] == nil {
            older = newer
            newer = [:]
            newer.reserveCapacity(Self.generationLimit)
        }
        newer[entityRow] = entry
    }
}
