import Replica

/// A SHA-256 over a replica's projections (`EventLog.stateHash()`), kept as
/// its 32 bytes: the `state` message carries them raw.
///
/// ```swift
/// let hash = StateHash(hex: try log.stateHash())!
/// hash.hex == (try log.stateHash())  // true
/// ```
public struct StateHash: Hashable, Sendable, CustomStringConvertible {
    /// Always 32 bytes.
    public let bytes: [UInt8]

    /// Nil unless `bytes` holds exactly 32 bytes.
    public init?(bytes: [UInt8]) {
        guard bytes.count == 32 else { return nil }
        self.bytes = bytes
    }

    /// Reads 64 hex digits (either case); nil for anything else.
    public init?(hex: String) {
        guard hex.utf8.count == 64, let bytes = Hex.bytes(hex) else { return nil }
        self.bytes = bytes
    }

    /// 64 lowercase hex digits, as `EventLog.stateHash()` prints them.
    public var hex: String { Hex.string(bytes) }

    public var description: String { hex }
}

/// What the `state` message says: how many events a replica holds and the
/// hash of its projections. Two replicas with equal cursors and equal
/// summaries hold the same events and the same state.
public struct StateSummary: Hashable, Sendable {
    /// `EventLog.eventCount()`.
    public var eventCount: Int64
    public var hash: StateHash
    /// The version of each declared domain the replica folds, by entity
    /// type (docs/domains.md): sent only to a peer that declared
    /// `WireCapability.domainVersions`; empty from one that did not.
    public var domains: [String: Int64]

    public init(eventCount: Int64, hash: StateHash, domains: [String: Int64] = [:]) {
        self.eventCount = eventCount
        self.hash = hash
        self.domains = domains
    }
}

/// A state summary together with the cursor it describes.
///
/// For this node's own summary the cursor is the one read with it. For a
/// peer's, it is the peer's cursor as its cursor messages had reported it
/// when the `state` message arrived: a sender sends `state` only right
/// after a cursor message, with no change in between (docs/protocol.md).
public struct StateReport: Hashable, Sendable {
    public var summary: StateSummary
    public var cursor: VectorCursor
    /// For this node's own summary: its signed heads, read with it (what it
    /// shows a peer whose state differs at an equal cursor); empty for a peer's.
    public var heads: [SignedHead]

    public init(summary: StateSummary, cursor: VectorCursor, heads: [SignedHead] = []) {
        self.summary = summary
        self.cursor = cursor
        self.heads = heads
    }
}

/// The outcome of comparing our state with a peer's at one cursor.
public struct StateCheck: Hashable, Sendable {
    /// The cursor both states describe.
    public var cursor: VectorCursor
    /// True when the two state hashes are equal.
    public var matched: Bool

    public init(cursor: VectorCursor, matched: Bool) {
        self.cursor = cursor
        self.matched = matched
    }
}
