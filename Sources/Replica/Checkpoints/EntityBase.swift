import Foundation

/// One entity as a checkpoint holds it: its state after the events the
/// checkpoint covers, who held it then, and the newest of those events.
/// A replica folds the events the checkpoint does not cover on top of it
/// (docs/storage.md "Checkpoints").
public struct EntityBase: Hashable, Sendable {
    public var entityType: String
    public var entityID: String
    /// The canonical JSON of the folded state; nil for an entity whose
    /// covered events are session events alone (it has no projection).
    public var state: String?
    /// Who held the entity after its covered events.
    public var session: SessionState
    /// The canonical key of its newest covered event.
    public var lastKey: EventOrderKey

    public init(entityType: String, entityID: String, state: String?, session: SessionState, lastKey: EventOrderKey) {
        self.entityType = entityType
        self.entityID = entityID
        self.state = state
        self.session = session
        self.lastKey = lastKey
    }

    /// The record's bytes, as a checkpoint's base digest hashes them and a
    /// bootstrap page carries them (docs/protocol.md "Checkpoints"): entity
    /// type, entity id, state (empty for none) and holder (empty for free)
    /// as texts; has-state (u8), claim id (16 bytes, zeros for none),
    /// granted (u8), last time (i64), last seq (u64), last event id (16 bytes).
    /// Each text is a u32 big-endian byte count and its UTF-8 bytes.
    public func encode(into bytes: inout [UInt8]) {
        ByteLayout.append(text: entityType, to: &bytes)
        ByteLayout.append(text: entityID, to: &bytes)
        ByteLayout.append(text: state ?? "", to: &bytes)
        ByteLayout.append(text: session.holder ?? "", to: &bytes)
        bytes.append(state == nil ? 0 : 1)
        bytes += session.claim?.orderedBytes ?? [UInt8](repeating: 0, count: 16)
        bytes.append(session.granted ? 1 : 0)
        ByteLayout.append(bigEndian: UInt64(bitPattern: lastKey.timeMs), to: &bytes)
        ByteLayout.append(bigEndian: lastKey.seq, to: &bytes)
        bytes += lastKey.eventID.orderedBytes
    }

    /// The fewest bytes `encode(into:)` writes (four empty texts).
    public static let minimumEncodedSize = 4 * 4 + 1 + 16 + 1 + 8 + 8 + 16

    /// About the bytes `encode(into:)` writes (the type and holder left
    /// out): what cuts a page of bases and what a start reports it fetched.
    public var approximateSize: Int {
        Self.minimumEncodedSize + entityID.utf8.count + (state?.utf8.count ?? 0)
    }

    /// Reads one record written by `encode(into:)` at `position`, moving it past.
    ///
    /// - Throws: `CheckpointError.malformed` for bytes that end early or hold
    ///   a flag other than 0 or 1.
    public static func decode(_ bytes: [UInt8], at position: inout Int) throws -> EntityBase {
        var reader = ByteLayout.Reader(bytes: bytes, position: position)
        let type = try reader.text("entity type")
        let id = try reader.text("entity id")
        let state = try reader.text("state")
        let holder = try reader.text("holder")
        let hasState = try reader.flag("has-state")
        let claim = try reader.raw(16, "claim")
        let granted = try reader.flag("granted")
        let timeMs = Int64(bitPattern: try reader.integer("last time"))
        let seq = try reader.integer("last seq")
        let eventID = UUID(bytes: try reader.raw(16, "last event id"))!
        position = reader.position
        let claimID = claim.allSatisfy { $0 == 0 } ? nil : UUID(bytes: claim)
        return EntityBase(
            entityType: type, entityID: id, state: hasState ? state : nil,
            session: SessionState(holder: holder.isEmpty ? nil : holder, claim: claimID, granted: granted),
            lastKey: EventOrderKey(timeMs: timeMs, seq: seq, eventID: eventID))
    }
}

/// The digests a checkpoint carries over its entity bases, fed in
/// `(entity type, entity id)` byte order.
public struct BaseDigests: Sendable {
    private var records = SHA256()
    private var states = SHA256()
    /// Bases fed so far.
    public private(set) var count: UInt64 = 0
    /// The last base fed, to check the order.
    private var last: (type: String, id: String)?

    public init() {}

    /// Feeds one base; false when it does not sort after the previous one.
    public mutating func add(_ base: EntityBase) -> Bool {
        if let last, !ByteLayout.sortsBefore(last, (base.entityType, base.entityID)) { return false }
        last = (base.entityType, base.entityID)
        var bytes: [UInt8] = []
        base.encode(into: &bytes)
        records.update(bytes)
        // As `EventLog.stateHash()`: type 0x00 id 0x00 state 0x0A, entities with a state only.
        if let state = base.state {
            states.update(base.entityType)
            states.update([0])
            states.update(base.entityID)
            states.update([0])
            states.update(state)
            states.update([0x0A])
        }
        count += 1
        return true
    }

    /// The SHA-256 of every record's bytes in order.
    public mutating func baseDigest() -> [UInt8] { records.finalize() }
    /// The state hash of these bases: what `EventLog.stateHash()` reports for
    /// a log whose projections are exactly them.
    public mutating func stateHash() -> [UInt8] { states.finalize() }
}
