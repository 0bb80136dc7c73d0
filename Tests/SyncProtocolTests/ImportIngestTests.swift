import Foundation
import Replica
import TestSupport
import Testing

@testable import SyncProtocol

/// How `peerd import` stores a verified file (docs/events.md "Import"):
/// each batch with the signed heads and points it reaches, in its
/// transaction, and the feeds it vouches for signed as they are stored.
@Suite struct ImportIngestTests {
    static let alice = SignedFeedTests.alice
    static let bob = try! SigningKey(seed: [UInt8](repeating: 9, count: 32))
    let directory: TemporaryDirectory
    init() throws { directory = try TemporaryDirectory() }

    func log(_ name: String, replicaID: String, signer: SigningKey? = nil) throws -> EventLog {
        var options = EventLog.Options()
        options.durability = .normal
        options.feedSigner = signer.map(FeedSigner.init)
        return try EventLog.create(at: directory.path("\(name).db"), replicaID: replicaID, options: options)
    }

    /// `count` item events of `feed`, seq 1 on.
    func events(_ feed: FeedID, _ count: Int) -> [Event] {
        (1...count).map { number in
            Event(
                eventID: UUID(), feed: feed, seq: UInt64(number), timeMs: 1_000 + Int64(number), entityType: "item",
                entityID: "i\(number % 7)", payload: #"{"name":"n","quantity":\#(number),"type":"Created"}"#)
        }
    }

    @Test func eachCommittedBatchKeepsTheSignedPointsItReachesAndAPeerVerifiesThePrefix() throws {
        // Alice's feed of 600 events, signed at 256 and 512 and at its head.
        let feed = FeedID(replicaID: "alice")
        let alice = try log("alice", replicaID: "alice", signer: Self.alice)
        try alice.ingest(events(feed, 600), adopting: [])
        let points = try [256, 512, 600].map { try alice.chainHead(of: feed, at: $0) }
        #expect(points.allSatisfy { $0.isSigned(byOneOf: [Self.alice.publicKey]) })
        let all = try alice.events(in: feed, seqs: 1...600, limit: 600).map(\.event)

        let bob = try log("bob", replicaID: "bob")
        try bob.ingest(Array(all[0..<300]), adopting: points.filter { $0.seq <= 300 })
        // A peer syncing now gets 1...256 with alice's signature, nothing it cannot verify.
        let page = try bob.signed(try bob.events(in: feed, seqs: 1...300, limit: 300).map(\.event))
        #expect(page.events.map(\.seq) == Array(1...256) && page.proofs[feed]?.head.seq == 256)
        let carol = try log("carol", replicaID: "carol")
        let keys = FeedKeys(["alice": [Self.alice.publicKey]])
        #expect(try carol.ingest(page.events, proofs: page.proofs, keys: keys).stored.count == 256)
        try bob.ingest(Array(all[300...]), adopting: points.filter { $0.seq > 300 })
        #expect(try [256, 512, 600].map { try bob.chainHead(of: feed, at: $0) } == points)
        #expect(try bob.signedHeads() == (try alice.signedHeads()))
    }

    @Test func aVouchedFeedIsSignedWithTheImportersKeyAsItIsStored() throws {
        let legacy = FeedID(replicaID: "legacy-7")
        let bob = try log("bob", replicaID: "bob", signer: Self.bob)
        try bob.ingest(events(legacy, 300), adopting: [], vouched: [legacy])
        let points = try [256, 300].map { try bob.chainHead(of: legacy, at: $0) }
        #expect(points.allSatisfy { $0.isSigned(byOneOf: [Self.bob.publicKey]) })
        // Unvouched, another origin's unsigned feed gets no signature.
        let other = FeedID(replicaID: "legacy-8")
        try bob.ingest(events(other, 10), adopting: [])
        #expect(try bob.chainHead(of: other, at: 10).signature == nil)
        // A receiver that holds the vouch verifies what bob serves of the feed.
        let page = try bob.signed(try bob.events(in: legacy, seqs: 1...300, limit: 300).map(\.event))
        let carol = try log("carol", replicaID: "carol")
        let keys = FeedKeys(["legacy-7": [Self.bob.publicKey]])
        #expect(try carol.ingest(page.events, proofs: page.proofs, keys: keys).stored.count == 300)
    }
}
