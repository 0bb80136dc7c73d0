import Foundation
import TestSupport
import Testing

@testable import Replica

/// Checkpoints over random histories (docs/storage.md "Checkpoints"): a
/// log that took a checkpoint, a log that started from it, a log that
/// moved onto it holding another prefix of every feed and a log that took
/// it over the whole history fold the events after it alike, and no
/// entity deleted at the checkpoint comes back.
@Suite("Checkpoint properties")
struct CheckpointPropertyTests {
    static let seeds: [UInt64] = Array(1...200)

    @Test("After a checkpoint at a random cut, four ways of holding it converge and nothing deleted resurrects")
    func checkpointsConverge() throws {
        var undeletedChecks = 0
        for seed in Self.seeds {
            let directory = try TemporaryDirectory()
            var rng = SplitMix64(seed: seed)
            let history = try RandomHistory.generate(using: &rng, in: directory, steps: 60)
            let clock = ManualClock(RandomHistory.baseTimeMs + 100_000_000)
            func log(_ name: String) throws -> EventLog {
                try EventLog.create(at: directory.path("\(name).db"), replicaID: name, options: .testing(clock: clock))
            }
            // The cut: a random prefix of every feed, some empty.
            let cut = history.feeds.map { Int.random(in: 0...$0.count, using: &rng) }
            let covered = zip(history.feeds, cut).map { Array($0.prefix($1)) }
            let rest = zip(history.feeds, cut).map { Array($0.dropFirst($1)) }

            let maker = try log("maker")
            for batch in RandomDelivery.batches(
                of: covered, using: &rng, repeatOneIn: 10, size: { Int.random(in: 1...6, using: &$0) })
            {
                try maker.ingest(batch)
            }
            let checkpoint = try maker.makeCheckpoint()
            _ = try maker.take(checkpoint, statement: [])
            let deletedAtCut = try Set(maker.projections(Item.self).filter(\.deleted).map(\.id))

            let started = try log("started")
            let bases = try maker.checkpointBases(after: nil, limit: 1_000)
            try started.start(from: checkpoint, statement: [], bases: bases)
            // A log that held another random prefix of every feed (below the cut on some, past it on
            // others) moves onto the checkpoint, as one whose peers dropped what it lacked.
            let held = zip(history.feeds, cut).map { feed, _ in
                Array(feed.prefix(Int.random(in: 0...feed.count, using: &rng)))
            }
            let moved = try log("moved")
            for batch in RandomDelivery.batches(
                of: held, using: &rng, repeatOneIn: 10, size: { Int.random(in: 1...6, using: &$0) })
            {
                try moved.ingest(batch)
            }
            try moved.rebase(onto: checkpoint, statement: [], bases: bases)
            for receiver in [maker, started, moved] {
                for batch in RandomDelivery.batches(
                    of: rest, using: &rng, repeatOneIn: 10, size: { Int.random(in: 1...6, using: &$0) })
                {
                    try receiver.ingest(batch)
                }
            }
            let whole = try log("whole")
            try whole.ingest(history.allEvents)
            #expect(try whole.take(checkpoint, statement: []) != .alreadyHeld, "seed \(seed)")

            let hash = try maker.stateHash()
            #expect(try started.stateHash() == hash, "seed \(seed): started from the checkpoint")
            #expect(try whole.stateHash() == hash, "seed \(seed): took it over the whole history")
            #expect(try moved.stateHash() == hash, "seed \(seed): moved onto it holding another prefix")
            #expect(try started.projections(Item.self) == maker.projections(Item.self), "seed \(seed)")
            for id in deletedAtCut {
                #expect(try started.projection(Item.self, id: id)?.deleted == true, "seed \(seed): \(id) resurrected")
                undeletedChecks += 1
            }
            #expect(try started.checkIntegrity(refold: true).findings == [], "seed \(seed)")
            #expect(try maker.checkIntegrity(refold: true).findings == [], "seed \(seed)")
            #expect(try moved.checkIntegrity(refold: true).findings == [], "seed \(seed): moved")
        }
        #expect(undeletedChecks > 20, "the histories deleted too few items at their cuts to test resurrection")
    }
}
