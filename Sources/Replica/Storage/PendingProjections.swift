/// The fold of the events that the projection rows do not hold yet: those
/// after `meta.projected_offset`, up to `knownOffset`.
///
/// A large batch (a catch-up, an import) folds into this in memory, and the
/// rows are written once for many batches (`EventLog.Options.ProjectionWrites`)
/// instead of once per batch, which turned every commit into hundreds of
/// scattered page writes. The events themselves are always committed first,
/// so a crash loses no event; the next transaction folds the tail again.
struct PendingProjections {
    /// `meta.projected_offset` as this log last read or wrote it.
    var projectedOffset: Int64
    /// The newest local offset folded here.
    var knownOffset: Int64
    /// Per entity row with an event in the tail: its newest event's offset
    /// (the head of the entity's chain, `entities.last_offset` to be).
    var heads: [Int64: Int64] = [:]
    /// Per entity row of a folded type with an event in the tail: its state.
    var states: [Int64: FoldedEntity] = [:]
    /// Events in the tail whose payload their domain cannot decode.
    var poisonOffsets: Set<Int64> = []

    init(projectedOffset: Int64, knownOffset: Int64) {
        self.projectedOffset = projectedOffset
        self.knownOffset = knownOffset
    }

    /// How many events the projection rows lag behind (about: offsets of
    /// rolled-back inserts may be skipped).
    var lag: Int64 { knownOffset - projectedOffset }

    /// True when the projection rows hold everything folded here.
    var isEmpty: Bool { lag == 0 && heads.isEmpty }
}

/// One entity's folded state, in memory.
struct FoldedEntity {
    /// The domain's encoder (only that of the domain, which is larger to copy).
    let encode: @Sendable (_ state: any Sendable) -> String
    /// The domain's `EventSourcedEntity` value.
    var state: any Sendable
    /// The canonical key of the newest event folded in.
    var lastKey: EventOrderKey
    /// `state` encoded, once something asked for it.
    var stateJSON: String?
    /// The writer holding the entity after `lastKey` (`entities.holder`); nil: free.
    var holder: String?
    /// False while the entity holds session events alone: it has no
    /// projection yet (`entities.state` stays NULL, reads find no entity).
    var hasState = true

    init(
        domain: Domain, state: any Sendable, lastKey: EventOrderKey, stateJSON: String? = nil, holder: String? = nil
    ) {
        encode = domain.encodeState
        self.state = state
        self.lastKey = lastKey
        self.stateJSON = stateJSON
        self.holder = holder
    }

    /// The canonical JSON of the state, encoded once.
    mutating func encoded() -> String {
        if let stateJSON { return stateJSON }
        let text = encode(state)
        stateJSON = text
        return text
    }
}
