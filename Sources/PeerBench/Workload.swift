import Foundation
import Replica

extension SplitMix64 {
    /// 16 random bytes shaped like a version-4 UUID, as `UUID()` makes them.
    mutating func uuidBytes() -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(16)
        for word in [next(), next()] {
            withUnsafeBytes(of: word) { bytes.append(contentsOf: $0) }
        }
        bytes[6] = (bytes[6] & 0x0F) | 0x40
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        return bytes
    }

    /// A random version-4 UUID.
    mutating func uuid() -> UUID {
        let b = uuidBytes()
        return UUID(
            uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15])
        )
    }
}

/// How the events of a workload choose the item they touch.
enum EntityDistribution: String {
    /// New items appear at an even rate over the run (each item's first
    /// event is its `Created`); of the other events, 80% touch one of the
    /// newest 10% of the items created so far and 20% any existing item.
    case recentHot = "recent items hot"
    /// Every event touches one of all the items, uniformly at random; an
    /// item's first event is its `Created`. The worst case for locality.
    case uniform = "uniform"
}

/// One generated item event.
struct ItemChange {
    /// The item, numbered from 0; its id is `i<item>`.
    var item: Int
    /// What happened to it.
    var event: ItemEvent

    /// The item's entity id.
    var entityID: String { "i\(item)" }
}

/// A deterministic stream of item events: `Created` for a new item, then
/// `QuantityChanged` (50%), `Renamed` (25%) or `NoteChanged` (25%) on
/// existing items. Payloads average about 60 bytes of canonical JSON.
struct ItemWorkload {
    /// The seed every phase uses, so all of them see the same events.
    static let seed: UInt64 = 0x5045_4552_5359_4E43

    /// How many events the stream yields.
    let eventCount: Int
    /// How many items it touches: `maxItems`, but never more than a tenth
    /// of the events (so a small run still updates its items).
    let itemCount: Int
    /// How events pick their item.
    let distribution: EntityDistribution
    /// How many events have been yielded so far.
    private(set) var produced = 0

    private var random: SplitMix64
    private var createdCount = 0
    private var isCreated: [Bool]

    init(eventCount: Int, maxItems: Int, distribution: EntityDistribution, seed: UInt64 = ItemWorkload.seed) {
        self.eventCount = eventCount
        self.itemCount = max(1, min(maxItems, eventCount / 10))
        self.distribution = distribution
        self.random = SplitMix64(seed: seed)
        self.isCreated = distribution == .uniform ? Array(repeating: false, count: itemCount) : []
    }

    /// The next event, or nil after `eventCount` events.
    mutating func next() -> ItemChange? {
        guard produced < eventCount else { return nil }
        defer { produced += 1 }
        switch distribution {
        case .recentHot:
            // Items due by the end of this event, at an even rate over the run.
            let due = ((produced + 1) * itemCount + eventCount - 1) / eventCount
            if createdCount < due {
                createdCount += 1
                return ItemChange(item: createdCount - 1, event: created())
            }
            let hot = max(1, createdCount / 10)
            let item =
                random.next() % 5 < 4
                ? createdCount - 1 - Int.random(in: 0..<hot, using: &random)
                : Int.random(in: 0..<createdCount, using: &random)
            return ItemChange(item: item, event: update())
        case .uniform:
            let item = Int.random(in: 0..<itemCount, using: &random)
            guard isCreated[item] else {
                isCreated[item] = true
                return ItemChange(item: item, event: created())
            }
            return ItemChange(item: item, event: update())
        }
    }

    /// Up to `size` next events; empty when the stream is done.
    mutating func nextBatch(_ size: Int) -> [ItemChange] {
        var batch: [ItemChange] = []
        batch.reserveCapacity(min(size, eventCount - produced))
        while batch.count < size, let change = next() { batch.append(change) }
        return batch
    }

    private mutating func created() -> ItemEvent {
        .created(name: name(), quantity: Int64.random(in: 0..<1_000, using: &random))
    }

    private mutating func update() -> ItemEvent {
        switch random.next() % 4 {
        case 0, 1: return .quantityChanged(quantity: Int64.random(in: 0..<1_000, using: &random))
        case 2: return .renamed(name: name())
        default: return .noteChanged(note: note())
        }
    }

    private static let finishes = ["Zinc-plated", "Stainless", "Galvanised", "Brass", "Black oxide", "Nylon"]
    private static let kinds = ["hex bolt", "machine screw", "wood screw", "flat washer", "lock nut", "wall plug"]

    /// A product name of about 42 characters.
    private mutating func name() -> String {
        let finish = ItemWorkload.finishes.randomElement(using: &random)!
        let kind = ItemWorkload.kinds.randomElement(using: &random)!
        let size = Int.random(in: 3...12, using: &random)
        let length = Int.random(in: 1...12, using: &random) * 10
        let box = [50, 100, 200].randomElement(using: &random)!
        return "\(finish) \(kind) ISO \(Int.random(in: 1000...9999, using: &random)) M\(size)x\(length), box of \(box)"
    }

    /// A storage note of about 40 characters.
    private mutating func note() -> String {
        let aisle = Int.random(in: 1...40, using: &random)
        let shelf = ["A", "B", "C", "D", "E"].randomElement(using: &random)!
        let bin = Int.random(in: 1...24, using: &random)
        return "aisle \(aisle), shelf \(shelf), bin \(bin); reorder at \(Int.random(in: 1...50, using: &random) * 10)"
    }
}

/// The events of several origin replicas, as a peer receives them in live
/// sync or from a relay: each event of an `ItemWorkload` goes to a random
/// origin's feed (next seq), times rise by 1 ms per event across all feeds,
/// and batches keep that order, so every batch is gap-free per feed.
struct RemoteEventSource {
    /// The origin feeds, `origin-1/default` ... `origin-<n>/default`; or,
    /// for a replica that signs them as their origin, `<replica>/origin-1` ...
    let feeds: [FeedID]

    private var workload: ItemWorkload
    private var random: SplitMix64
    private var heads: [UInt64]
    private var emitted: Int64 = 0
    private let baseTimeMs: Int64

    /// Events in the past (ending a minute ago), so that no clock skew is reported.
    init(workload: ItemWorkload, origins: Int, wallClockMs: Int64, replicaID: String? = nil) {
        self.workload = workload
        self.feeds = (1...origins).map { index in
            replicaID.map { FeedID(replicaID: $0, scope: "origin-\(index)") } ?? FeedID(replicaID: "origin-\(index)")
        }
        self.random = SplitMix64(seed: ItemWorkload.seed ^ 0xFEED)
        self.heads = Array(repeating: 0, count: origins)
        self.baseTimeMs = wallClockMs - Int64(workload.eventCount) - 60_000
    }

    /// Up to `size` next events; empty when the workload is done.
    mutating func nextBatch(_ size: Int) -> [Event] {
        workload.nextBatch(size).map { change in
            let origin = Int(random.next() % UInt64(feeds.count))
            heads[origin] += 1
            emitted += 1
            return Event(
                eventID: random.uuid(), feed: feeds[origin], seq: heads[origin],
                timeMs: baseTimeMs + emitted, entityType: Item.entityType,
                entityID: change.entityID, payload: change.event.payload)
        }
    }
}
