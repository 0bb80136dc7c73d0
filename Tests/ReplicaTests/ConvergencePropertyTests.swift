import Foundation
import TestSupport
import Testing

@testable import Replica

/// Convergence properties over random histories, replayable from their seed.
@Suite("Convergence properties")
struct ConvergencePropertyTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory()
    }

    static let seeds: [UInt64] = [1, 7, 42, 0xC0FF_EE00, 20_240_601, 0xDEAD_BEEF_0BAD_F00D]

    @Test("Receivers that get every event in different orders converge", arguments: seeds)
    func receiversConverge(seed: UInt64) throws {
        var rng = SplitMix64(seed: seed)
        let history = try RandomHistory.generate(using: &rng, in: directory, steps: 150)
        let all = history.allEvents

        let reference = try freshLog("reference")
        let referenceReport = try reference.ingest(all)
        #expect(referenceReport.isComplete, "seed \(seed): \(referenceReport)")
        #expect(referenceReport.stored.count == all.count, "seed \(seed)")
        let expectedItems = try reference.projections(Item.self)
        let expectedHash = try reference.stateHash()
        #expect(!expectedItems.isEmpty, "seed \(seed): the history folded no item")

        for index in 0..<3 {
            let receiver = try freshLog("receiver-\(index)")
            let reports = try history.deliverShuffled(to: receiver, using: &rng)
            #expect(
                reports.allSatisfy { $0.isComplete }, "seed \(seed): receiver \(index) saw a gap, fork or invalid event"
            )
            #expect(try receiver.cursor() == (try reference.cursor()), "seed \(seed): receiver \(index)")
            #expect(try receiver.projections(Item.self) == expectedItems, "seed \(seed): receiver \(index)")
            #expect(try receiver.stateHash() == expectedHash, "seed \(seed): receiver \(index)")
        }
    }

    @Test("Origins converge once each has pulled every feed", arguments: seeds)
    func originsConvergeAfterFullExchange(seed: UInt64) throws {
        var rng = SplitMix64(seed: seed)
        let history = try RandomHistory.generate(using: &rng, in: directory, steps: 150)
        let reference = try freshLog("reference")
        try reference.ingest(history.allEvents)

        for origin in history.origins {
            var pages = try reference.missingEventPages(for: try origin.cursor(), maxEvents: 7)
            while let page = try pages.next() {
                let report = try origin.ingest(page)
                #expect(report.isComplete, "seed \(seed): \(origin.replicaID): \(report)")
            }
            #expect(
                try origin.projections(Item.self) == (try reference.projections(Item.self)),
                "seed \(seed): \(origin.replicaID)")
            #expect(try origin.stateHash() == (try reference.stateHash()), "seed \(seed): \(origin.replicaID)")
        }
    }

    @Test("Incremental folding gives the same items as refolding every history", arguments: seeds)
    func incrementalEqualsRefold(seed: UInt64) throws {
        var rng = SplitMix64(seed: seed)
        let history = try RandomHistory.generate(using: &rng, in: directory, steps: 150)
        let receiver = try freshLog("receiver")
        _ = try history.deliverShuffled(to: receiver, using: &rng)

        let logs = [receiver] + history.origins
        for log in logs {
            let refolded = try Self.refoldEveryItem(Fixtures.allEvents(log).map(\.event))
            #expect(try log.projections(Item.self) == refolded, "seed \(seed): \(log.replicaID)")
        }
    }

    @Test("Offering feeds newest first in one batch gives the same state as one by one", arguments: seeds)
    func oneReversedBatchEqualsOneByOne(seed: UInt64) throws {
        var rng = SplitMix64(seed: seed)
        let history = try RandomHistory.generate(using: &rng, in: directory, steps: 100)
        let oneByOne = try freshLog("one-by-one")
        for feed in history.feeds.reversed() {
            for event in feed { try oneByOne.ingest([event]) }
        }
        let batched = try freshLog("batched")
        try batched.ingest(history.feeds.reversed().flatMap { $0.reversed() })

        #expect(try batched.projections(Item.self) == (try oneByOne.projections(Item.self)), "seed \(seed)")
        #expect(try batched.stateHash() == (try oneByOne.stateHash()), "seed \(seed)")
    }

    // MARK: - Helpers

    private func freshLog(_ name: String) throws -> EventLog {
        try EventLog.create(
            at: directory.path("\(name).db"), replicaID: name,
            options: .testing(clock: ManualClock(RandomHistory.baseTimeMs)))
    }

    /// Folds each item's whole history from scratch, in canonical order,
    /// skipping undone events, undos and payloads that do not decode.
    static func refoldEveryItem(_ events: [Event]) throws -> [Item] {
        let byItem = Dictionary(grouping: events.filter { $0.entityType == Item.entityType }, by: \.entityID)
        return try byItem.keys.sorted().map { id in
            let history = byItem[id]!.sorted { $0.orderKey < $1.orderKey }
            let cancelled = Fold.cancelledEventIDs(inCanonicalOrder: history)
            var item = Item(id: id)
            for event in history where !cancelled.contains(event.eventID) {
                if UndoneEvent.parse(event.payload) != nil { continue }
                guard let decoded = try? JSONDecoder().decode(ItemEvent.self, from: Data(event.payload.utf8)) else {
                    continue
                }
                item.apply(decoded, info: ModificationInfo(event))
            }
            // The stored projection is the canonical JSON of the state; compare like with like.
            return try JSONDecoder().decode(Item.self, from: Data(CanonicalJSON.text(of: item).utf8))
        }
    }
}
