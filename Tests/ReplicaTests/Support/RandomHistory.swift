import Foundation
import TestSupport

@testable import Replica

/// Random item histories written by several origin replicas whose clocks
/// disagree, which gossip partial prefixes to each other while they edit,
/// so that undos target remote events and hybrid clocks observe each other.
struct RandomHistory {
    /// The origin replicas, with their own feeds and whatever they pulled.
    var origins: [EventLog] = []
    /// Each origin's own feed, in seq order.
    var feeds: [[Event]] = []

    static let itemIDs = ["i0", "i1", "i2", "i3", "i4", "i5"]
    static let baseTimeMs: Int64 = 1_700_000_000_000

    /// Builds a history of `steps` random operations in `directory`.
    static func generate(
        using rng: inout SplitMix64, in directory: TemporaryDirectory, steps: Int
    ) throws -> RandomHistory {
        var history = RandomHistory()
        var clocks: [ManualClock] = []
        var offsets: [Int64] = []
        let originCount = Int.random(in: 3...5, using: &rng)
        // Behind, in step, slightly ahead, and (sometimes) beyond the tolerated skew.
        let possibleOffsets: [Int64] = [0, 0, -5_000, 3_000, -60_000, 25 * 60 * 60 * 1000]
        for index in 0..<originCount {
            let offset = possibleOffsets.randomElement(using: &rng)!
            let clock = ManualClock(baseTimeMs + offset)
            let log = try EventLog.create(
                at: directory.path("origin-\(index).db"), replicaID: "origin-\(index)",
                options: .testing(clock: clock, undoLimit: 3))
            clocks.append(clock)
            offsets.append(offset)
            history.origins.append(log)
        }

        var trueTime = baseTimeMs
        for _ in 0..<steps {
            // Zero steps make equal times, so the seq and event id tie-breaks matter.
            trueTime += Int64.random(in: 0...40, using: &rng)
            for (clock, offset) in zip(clocks, offsets) { clock.set(trueTime + offset) }
            let origin = history.origins.randomElement(using: &rng)!
            let item = itemIDs.randomElement(using: &rng)!
            let roll = Int.random(in: 0..<100, using: &rng)
            switch roll {
            case 0..<50:
                try origin.append(NewEvent(item: item, randomItemEvent(using: &rng)))
            case 50..<62:
                try tolerateUndoRefusals { try origin.undo(entityType: Item.entityType, entityID: item) }
            case 62..<68:
                let held = try origin.events(entityType: Item.entityType, entityID: item)
                if let target = held.randomElement(using: &rng) {
                    let undo = NewEvent(
                        entityType: Item.entityType, entityID: item,
                        payload: Fixtures.undonePayload(target.event.eventID))
                    try tolerateUndoRefusals { try origin.append(undo) }
                }
            default:
                let source = history.origins.randomElement(using: &rng)!
                guard source !== origin else { continue }
                var pages = try source.missingEventPages(
                    for: try origin.cursor(), maxEvents: Int.random(in: 1...20, using: &rng))
                if let page = try pages.next() { try origin.ingest(page) }
            }
        }
        history.feeds = try history.origins.map(Fixtures.ownEvents)
        return history
    }

    static func randomItemEvent(using rng: inout SplitMix64) -> ItemEvent {
        let names = ["Bolts", "Nuts", "Washers", "Screws"]
        switch Int.random(in: 0..<100, using: &rng) {
        case 0..<15: return .created(name: names.randomElement(using: &rng)!, quantity: .random(in: 0...9, using: &rng))
        case 15..<40: return .renamed(name: names.randomElement(using: &rng)!)
        case 40..<72: return .quantityChanged(quantity: .random(in: -3...50, using: &rng))
        case 72..<96:
            return .noteChanged(note: Bool.random(using: &rng) ? nil : "note \(Int.random(in: 0...9, using: &rng))")
        default: return .deleted
        }
    }

    /// Runs an undo, ignoring the two refusals a random history runs into.
    private static func tolerateUndoRefusals(_ body: () throws -> StoredEvent) throws {
        do {
            _ = try body()
        } catch EventLogError.nothingToUndo, EventLogError.undoLimitReached {
            return
        }
    }

    /// Every event of every feed.
    var allEvents: [Event] { feeds.flatMap { $0 } }

    /// Delivers every feed to `log` as a random interleaving of the feeds,
    /// each feed in seq order, in batches of random size, with some events
    /// offered again. Returns the reports of the ingests.
    func deliverShuffled(to log: EventLog, using rng: inout SplitMix64) throws -> [IngestReport] {
        try RandomDelivery.batches(of: feeds, using: &rng, repeatOneIn: 10) { Int.random(in: 1...8, using: &$0) }
            .map { try log.ingest($0) }
    }
}
