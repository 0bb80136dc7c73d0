import Foundation
import PeerNet
import Replica
import Testing

@testable import SyncProtocol

@Suite struct MessageCodecTests {
    let feedA = FeedID(replicaID: "replica-a")
    let feedB = FeedID(replicaID: "replica-b", scope: "shop")

    func event(_ feed: FeedID, _ seq: UInt64, time: Int64 = 1_700_000_000_000) -> Event {
        Event(
            eventID: UUID(), feed: feed, seq: seq, timeMs: time + Int64(seq), entityType: "item",
            entityID: "i\(seq)", payload: #"{"type":"Deleted"}"#)
    }

    func roundTrip(_ messages: [Message]) throws -> [Message] {
        var encoder = MessageEncoder()
        var decoder = MessageDecoder()
        return try messages.map { try decoder.decode(encoder.encode($0)) }
    }

    @Test func everyMessageSurvivesEncoding() throws {
        let batch = EventBatch(
            batchID: 1, events: [event(feedA, 1), event(feedA, 2), event(feedB, 7), event(feedA, 9, time: -5)])
        let messages: [Message] = [
            .hello(Hello(replicaID: "replica-a", role: .relay, listenPort: 4100)),
            .cursor([feedA: 3, feedB: 9]),
            .events(batch),
            .ack(batchID: 1, heads: [feedB: 9]),
            .cursor(VectorCursor()),
            .goodbye(reason: "shutting down"),
            .peers([PeerAdvert(replicaID: "replica-c", address: PeerAddress(host: "10.77.0.13", port: 4100))]),
        ]
        #expect(try roundTrip(messages) == messages)
    }

    @Test func aFeedIsNamedOnceAndThenSentAsAnIndex() {
        var encoder = MessageEncoder()
        let first = encoder.encode(.cursor([feedA: 1]))
        let second = encoder.encode(.cursor([feedA: 2]))
        #expect(first.count > 2 + feedA.replicaID.utf8.count)
        #expect(second.count == 5)  // type, no declarations, one entry: index and head
    }

    @Test func anUnchangedCursorCostsTwoBytes() {
        var encoder = MessageEncoder()
        #expect(encoder.encode(.cursor(VectorCursor())) == [2, 0, 0])
    }

    @Test func anUndeclaredFeedIsRefused() {
        var decoder = MessageDecoder()
        #expect(throws: WireError.malformed("undeclared feed 0")) { try decoder.decode([2, 0, 1, 0, 5]) }
    }

    @Test func anUnknownMessageTypeIsRefused() {
        var decoder = MessageDecoder()
        #expect(throws: WireError.unknownMessageType(99)) { try decoder.decode([99]) }
    }

    @Test func trailingBytesAreRefused() {
        var encoder = MessageEncoder()
        var decoder = MessageDecoder()
        let bytes = encoder.encode(.goodbye(reason: "x")) + [0]
        #expect(throws: WireError.malformed("1 trailing byte(s) after goodbye")) { try decoder.decode(bytes) }
    }

    @Test func aForgedCountCannotReserveMemory() {
        var decoder = MessageDecoder()
        // events: no declarations, batch 1, 2^62 runs.
        #expect(throws: WireError.self) {
            try decoder.decode([3, 0, 1, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x3F])
        }
    }

    @Test func everyTruncationOfAValidMessageIsRefused() throws {
        var encoder = MessageEncoder()
        let bytes = encoder.encode(.events(EventBatch(batchID: 3, events: [event(feedA, 1), event(feedA, 2)])))
        for length in 0..<bytes.count {
            var decoder = MessageDecoder()
            #expect(throws: WireError.self) { try decoder.decode(Array(bytes.prefix(length))) }
        }
    }

    @Test func randomBytesNeverCrashTheDecoder() {
        var random = SplitMix64(seed: 42)
        for _ in 0..<2_000 {
            var decoder = MessageDecoder()
            let bytes = (0..<Int.random(in: 0..<40, using: &random)).map { _ in
                UInt8.random(in: 0...255, using: &random)
            }
            _ = try? decoder.decode(bytes)
        }
    }
}
