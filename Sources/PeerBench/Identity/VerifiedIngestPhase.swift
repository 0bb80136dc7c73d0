import Foundation
import Replica
import SyncProtocol

/// The catch-up of signed feeds with verification on against the same run
/// with it off: one signing origin's pages (as a peer serves them, with
/// their proofs) ingested by two fresh receivers, page by page in turn, one
/// verifying every chain link and signature before it stores, one not.
struct VerifiedIngestPhase {
    let events: Int
    let pageEvents: Int
    let workspace: Workspace

    struct Result {
        var verifiedPerSecond: Double
        var unverifiedPerSecond: Double
        var ratio: Double { verifiedPerSecond / unverifiedPerSecond }
    }

    func run() throws -> Result {
        let key = try SigningKey(seed: [UInt8](repeating: 5, count: 32))
        var options = EventLog.Options()
        options.feedSigner = FeedSigner(key)
        options.durability = .normal
        let origin = try EventLog.create(
            at: workspace.freshDatabase("signed-origin.db"), replicaID: "origin", options: options)
        var random = SplitMix64(seed: 0x51_6E_ED)
        for start in stride(from: 0, to: events, by: 5_000) {
            try origin.append(
                (start..<min(start + 5_000, events)).map { index in
                    NewEvent(
                        item: "item-\(random.next() % 1_000)",
                        index < 1_000
                            ? .created(name: "Item \(index)", quantity: Int64(index))
                            : .quantityChanged(quantity: Int64(index)))
                })
        }
        var pages: [EventPage] = []
        var next: UInt64 = 1
        while next <= UInt64(events) {
            let page = try origin.signed(
                origin.eventsInCanonicalOrder(
                    of: [(FeedID(replicaID: "origin"), next...UInt64(events))], maxEvents: pageEvents, maxBytes: 8 << 20
                ))
            pages.append(page)
            next = page.events.last!.seq + 1
        }
        var receiverOptions = EventLog.Options()
        receiverOptions.durability = .normal
        let verifying = try EventLog.create(
            at: workspace.freshDatabase("signed-verifying.db"), replicaID: "v", options: receiverOptions)
        let trusting = try EventLog.create(
            at: workspace.freshDatabase("signed-trusting.db"), replicaID: "t", options: receiverOptions)
        let keys = FeedKeys(["origin": [key.publicKey]])
        var verified = Stopwatch()
        var unverified = Stopwatch()
        for page in pages {
            let report = try verified.measure { try verifying.ingest(page.events, proofs: page.proofs, keys: keys) }
            guard report.isComplete, report.stored.count == page.events.count else {
                throw UsageError("identity: a verified page was refused: \(report.refused)")
            }
            try unverified.measure { try trusting.ingest(page.events) }
        }
        return Result(
            verifiedPerSecond: Double(events) / verified.seconds,
            unverifiedPerSecond: Double(events) / unverified.seconds)
    }
}
