import Foundation
import Replica
import TestSupport
import Testing

@testable import SyncProtocol

/// Signed feeds in the log: what an origin signs, what a receiver verifies
/// before it stores, and the fork proofs (docs/protocol.md "Signed feeds").
@Suite struct SignedFeedTests {
    static let alice = try! SigningKey(seed: [UInt8](repeating: 7, count: 32))
    static let mallory = try! SigningKey(seed: [UInt8](repeating: 8, count: 32))
    static let keys = FeedKeys(["alice": [alice.publicKey]])
    let directory: TemporaryDirectory
    init() throws { directory = try TemporaryDirectory() }

    /// The event of the documented test vector.
    static let vectorEvent = Event(
        eventID: UUID(uuidString: "00112233-4455-6677-8899-aabbccddeeff")!, feed: FeedID(replicaID: "alice"), seq: 1,
        timeMs: 1_700_000_000_000, entityType: "item", entityID: "i1",
        payload: #"{"name":"Bolts","quantity":5,"type":"Created"}"#)

    @Test func theChainAndTheHeadMessageMatchTheDocumentedVector() {
        let link = FeedChain.link(after: FeedChain.genesis, Self.vectorEvent)
        #expect(Hex.string(link) == "73593a2927f849004311b6e5e08b73b3d601eec1f651e956c4b4b0423f923d1c")
        let encoding = FeedChain.encoding(of: Self.vectorEvent)
        #expect(encoding.count == 16 + (4 + 5) + (4 + 7) + 8 + 8 + (4 + 4) + (4 + 2) + (4 + 46))
        let message = FeedChain.headMessage(feed: Self.vectorEvent.feed, seq: 1, link: link)
        let signature = Self.alice.sign(message)
        #expect(
            Hex.string(signature)
                == "129536ebadefb12068918140f661048a832e7081c599b09a4fa365e7e8d274a26130fc179246dcf7d99129a02cd7ef0462be50c7ad7dcc785a9081f81b475e01"
        )
        #expect(
            SignedHead(feed: Self.vectorEvent.feed, seq: 1, link: link, signature: signature)
                .isSigned(byOneOf: [Self.alice.publicKey]))
        #expect(
            !SignedHead(feed: Self.vectorEvent.feed, seq: 2, link: link, signature: signature)
                .isSigned(byOneOf: [Self.alice.publicKey]))
    }

    func log(_ name: String, replicaID: String, signer: SigningKey? = nil) throws -> EventLog {
        var options = EventLog.Options()
        options.durability = .normal
        options.feedSigner = signer.map(FeedSigner.init)
        return try EventLog.create(at: directory.path("\(name).db"), replicaID: replicaID, options: options)
    }

    func write(_ log: EventLog, _ count: Int, from start: Int = 1) throws {
        for number in start..<(start + count) {
            try log.append(NewEvent(item: "i\(number)", .created(name: "n\(number)", quantity: Int64(number))))
        }
    }

    func page(of log: EventLog, _ seqs: ClosedRange<UInt64>, feed: FeedID = FeedID(replicaID: "alice")) throws
        -> EventPage
    {
        try log.signed(log.events(in: feed, seqs: seqs, limit: 1_000).map(\.event))
    }

    @Test func anOriginSignsAnyCutAndAReceiverServesOnFromItsSignedHeads() throws {
        let alice = try log("alice", replicaID: "alice", signer: Self.alice)
        try write(alice, 300)
        // The origin signs wherever its page ends.
        let first = try page(of: alice, 1...3)
        #expect(first.events.map(\.seq) == [1, 2, 3] && first.proofs.first?.value.head.seq == 3)
        let bob = try log("bob", replicaID: "bob")
        #expect(try bob.ingest(first.events, proofs: first.proofs, keys: Self.keys).stored.count == 3)
        let rest = try page(of: alice, 4...300)
        let report = try bob.ingest(rest.events, proofs: rest.proofs, keys: Self.keys)
        #expect(report.stored.count == 297 && report.isComplete)
        // Ed25519 is deterministic: the head alice signed as she wrote is the one she signed for the page.
        #expect(try bob.signedHeads() == (try alice.signedHeads()))
        // Bob holds a signed head at 300 only: a page from 260 reads on to it, with the link at 259 computed.
        let served = try self.page(of: bob, 260...262)
        #expect(served.events.map(\.seq) == Array(260...300))
        let carol = try log("carol", replicaID: "carol")
        let all = try self.page(of: bob, 1...3)
        #expect(all.events.map(\.seq) == Array(1...300))
        #expect(try carol.ingest(all.events, proofs: all.proofs, keys: Self.keys).stored.count == 300)
        #expect(try carol.cursor() == (try alice.cursor()))
    }

    @Test func aForwardersPageEndsAtTheBatchEndsItReceived() throws {
        let alice = try log("alice", replicaID: "alice", signer: Self.alice)
        try write(alice, 200)
        let bob = try log("bob", replicaID: "bob")
        // Two bulk batches (100 events each: their ends are kept as signed points) and a few live events.
        for seqs: ClosedRange<UInt64> in [1...100, 101...200] {
            let part = try page(of: alice, seqs)
            #expect(try bob.ingest(part.events, proofs: part.proofs, keys: Self.keys).isComplete)
        }
        try write(alice, 3, from: 201)
        for seq: UInt64 in 201...203 {
            let live = try page(of: alice, seq...seq)
            #expect(try bob.ingest(live.events, proofs: live.proofs, keys: Self.keys).isComplete)
        }
        #expect(try page(of: bob, 1...150).events.map(\.seq) == Array(1...100))  // cut back to 100
        #expect(try page(of: bob, 101...201).events.map(\.seq) == Array(101...200))  // 201, 202 are no points
        #expect(try page(of: bob, 201...201).events.map(\.seq) == Array(201...203))  // read on to the head
    }

    @Test func aHubServesSeveralOriginsInCanonicalPagesThatVerifyAndConverge() throws {
        let dave = try SigningKey(seed: [UInt8](repeating: 9, count: 32))
        let keys = FeedKeys(["alice": [Self.alice.publicKey], "dave": [dave.publicKey]])
        let origins = [
            try log("alice", replicaID: "alice", signer: Self.alice), try log("dave", replicaID: "dave", signer: dave),
        ]
        // Both origins write the same 40 items in turn, so their feeds interleave in canonical order.
        for round in 0..<300 {
            let origin = origins[round % 2]
            let item = "i\(round % 40)"
            let change: ItemEvent =
                round < 40 ? .created(name: "n\(round)", quantity: 1) : .quantityChanged(quantity: Int64(round))
            try origin.append(NewEvent(item: item, change))
        }
        // The hub holds each origin's feed as bulk runs of 100 (each run's end a signed point of its own).
        let bob = try log("bob", replicaID: "bob")
        for (origin, replica) in zip(origins, ["alice", "dave"]) {
            for seqs: ClosedRange<UInt64> in [1...100, 101...150] {
                let part = try page(of: origin, seqs, feed: FeedID(replicaID: replica))
                #expect(try bob.ingest(part.events, proofs: part.proofs, keys: keys).isComplete)
            }
        }
        // Carol catches up from the hub in merged pages of 70, which end nowhere near those points.
        let carol = try log("carol", replicaID: "carol")
        var pages = 0
        while try carol.cursor() != (try bob.cursor()), pages < 20 {
            let ranges = try carol.cursor().missing(from: bob.cursor()).sorted { $0.key < $1.key }.map {
                ($0.key, $0.value)
            }
            let served = try bob.signed(try bob.eventsInCanonicalOrder(of: ranges, maxEvents: 70, maxBytes: 1 << 20))
            // Every feed's run in the page ends at the signed head its proof names.
            for (feed, proof) in served.proofs {
                #expect(served.events.last { $0.feed == feed }?.seq == proof.head.seq)
            }
            let report = try carol.ingest(served.events, proofs: served.proofs, keys: keys)
            #expect(report.isComplete && report.refused.isEmpty, "\(report.refused)")
            pages += 1
        }
        #expect(try carol.cursor() == (try bob.cursor()))
        #expect(try carol.stateHash() == (try bob.stateHash()))
        #expect(try carol.signedHeads() == (try bob.signedHeads()))
    }

    @Test func alteredForgedReplayedAndUnsignedRunsAreRefusedWithNothingStored() throws {
        let alice = try log("alice", replicaID: "alice", signer: Self.alice)
        try write(alice, 3)
        let honest = try page(of: alice, 1...3)
        let bob = try log("bob", replicaID: "bob")
        let feed = FeedID(replicaID: "alice")

        var altered = honest
        altered.events[1].payload = #"{"name":"n2","quantity":999,"type":"Created"}"#
        var forged = honest  // a relay signs with its own key for alice's feed
        let link = FeedChain.link(after: FeedChain.genesis, forged.events)
        forged.proofs[feed]!.head.signature = Self.mallory.sign(FeedChain.headMessage(feed: feed, seq: 3, link: link))
        var replayed = honest  // alice's events moved into another feed of hers
        let other = FeedID(replicaID: "alice", scope: "team")
        replayed.events = honest.events.map { event in
            var moved = event
            moved.feed = other
            return moved
        }
        replayed.proofs = [
            other: FeedProof(
                baseLink: FeedChain.genesis,
                head: SignedHead(
                    feed: other, seq: 3, link: honest.proofs[feed]!.head.link,
                    signature: honest.proofs[feed]!.head.signature))
        ]
        var unsigned = honest
        unsigned.proofs[feed]!.head.signature = nil
        for (bad, why) in [
            (altered, RefusalReason.badSignature(origin: "alice")), (forged, .badSignature(origin: "alice")),
            (replayed, .badSignature(origin: "alice")), (unsigned, .unsignedHead),
        ] {
            let report = try bob.ingest(bad.events, proofs: bad.proofs, keys: Self.keys)
            #expect(report.stored.isEmpty)
            #expect(report.refused.count == 1 && report.refused[0].reason == why, "\(report.refused)")
        }
        let stranger = try bob.ingest(honest.events, proofs: honest.proofs, keys: FeedKeys())
        #expect(stranger.refused.first?.reason == .noKey(origin: "alice"))
        #expect(stranger.refused.first?.description.contains("no identity key is known for alice") == true)
        #expect(try bob.eventCount() == 0)
        #expect(try bob.ingest(honest.events, proofs: honest.proofs, keys: Self.keys).stored.count == 3)
    }

    @Test func aRestoredOriginThatWritesAgainIsProvenForkedAndQuarantinedEverywhere() throws {
        let alice = try log("alice", replicaID: "alice", signer: Self.alice)
        try write(alice, 3)
        let bob = try log("bob", replicaID: "bob")
        let first = try page(of: alice, 1...3)
        try bob.ingest(first.events, proofs: first.proofs, keys: Self.keys)
        try write(alice, 2, from: 4)  // bob holds 1...5
        let more = try page(of: alice, 4...5)
        try bob.ingest(more.events, proofs: more.proofs, keys: Self.keys)
        // Alice's old copy (seq 3) writes again: another seq 4 and 5.
        let restored = try log("restored", replicaID: "alice", signer: Self.alice)
        try restored.ingest(first.events, proofs: first.proofs, keys: Self.keys)
        try write(restored, 2, from: 40)
        let other = try page(of: restored, 4...5)
        #expect(try bob.signedHeads().first?.seq == 5)

        let report = try bob.ingest(other.events, proofs: other.proofs, keys: Self.keys)
        #expect(report.stored.isEmpty)
        let proof = try #require(report.forkProofs.first)
        #expect(proof.proves(keys: [Self.alice.publicKey]))
        #expect(!proof.proves(keys: [Self.mallory.publicKey]))
        #expect(try bob.forkProofs() == [proof])
        #expect(try bob.cursor() == VectorCursor())
        #expect(try bob.eventCount() == 5)  // what it held stays
        let later = try bob.ingest(more.events, proofs: more.proofs, keys: Self.keys)
        #expect(later.refusedForked == [FeedID(replicaID: "alice"): 2])

        // A replica that never saw the other history takes the proof.
        let carol = try log("carol", replicaID: "carol")
        #expect(try carol.quarantineFork(proof, keys: [Self.alice.publicKey]))
        #expect(try !carol.quarantineFork(proof, keys: [Self.alice.publicKey]))  // once
        #expect(try carol.ingest(first.events, proofs: first.proofs, keys: Self.keys).refusedForked.count == 1)
        // The restored copy itself may no longer write to the feed.
        #expect(try restored.quarantineFork(proof, keys: [Self.alice.publicKey]))
        #expect(throws: EventLogError.self) {
            try restored.append(NewEvent(item: "x", .created(name: "x", quantity: 1)))
        }

        // The proof survives the wire.
        var encoder = MessageEncoder()
        var decoder = MessageDecoder()
        #expect(try decoder.decode(encoder.encode(.forkProofs([proof]))) == .forkProofs([proof]))
    }

    @Test func aRevocationCutsAVerifiedRunAtItsTime() throws {
        let alice = try log("alice", replicaID: "alice", signer: Self.alice)
        try write(alice, 5)
        let page = try page(of: alice, 1...5)
        var keys = Self.keys
        keys.validBeforeMs["alice"] = page.events[2].timeMs  // revoked as it wrote seq 3
        let bob = try log("bob", replicaID: "bob")
        let report = try bob.ingest(page.events, proofs: page.proofs, keys: keys)
        #expect(report.stored.map(\.event.seq) == [1, 2] && report.refusedRevoked == 3)
        #expect(try bob.signedHeads().map(\.seq) == [2])
    }

    @Test func twoHeadsAtOneSeqWithOtherLinksAreAProof() throws {
        let feed = FeedID(replicaID: "alice")
        func head(_ link: UInt8) -> SignedHead {
            let link = [UInt8](repeating: link, count: 32)
            return SignedHead(
                feed: feed, seq: 9, link: link,
                signature: Self.alice.sign(FeedChain.headMessage(feed: feed, seq: 9, link: link)))
        }
        let proof = ForkProof(held: head(1), other: head(2), otherBaseLink: head(2).link, otherEvents: [])
        #expect(proof.proves(keys: [Self.alice.publicKey]))
        #expect(
            !ForkProof(held: head(1), other: head(1), otherBaseLink: head(1).link, otherEvents: []).proves(
                keys: [Self.alice.publicKey]))
    }

    @Test func forwardedEventsOutsideTheirOriginsWriteScopesAreLeftOut() throws {
        let carolKey = try SigningKey(seed: [UInt8](repeating: 9, count: 32))
        let carol = Certificate.issue(
            by: IdentityTests.admin, for: carolKey.publicKey, replicaID: "carol", read: ["team"], write: ["team"],
            issuedMs: IdentityTests.issuedMs, expiresMs: nil)
        var node = RevocationTests.node(certificates: [carol])
        let team = SessionFixtures.events(FeedID(replicaID: "carol", scope: "team"), 1...2)
        let bobs = SessionFixtures.events(FeedID(replicaID: "carol", scope: "bob"), 1...3)
        // alice-tablet forwards carol's events; carol may write team only.
        let effects = node.received(.events(EventBatch(batchID: 1, events: team + bobs)), on: 1, now: 0)
        #expect(effects.contains(.store(1, [EventBatch(batchID: 1, events: team)], keys: nil)), "\(effects)")
        #expect(node.metrics().eventsRejectedScope == 3)
    }

    @Test func theEventsMessageCarriesTheProofs() throws {
        let alice = try log("alice", replicaID: "alice", signer: Self.alice)
        try write(alice, 4)
        let page = try page(of: alice, 2...4)
        let batch = EventBatch(batchID: 1, events: page.events, proofs: page.proofs)
        var encoder = MessageEncoder()
        var decoder = MessageDecoder()
        #expect(try decoder.decode(encoder.encode(.events(batch))) == .events(batch))
    }
}
