import Foundation
import Replica
import Testing

@testable import SyncProtocol

/// Compressed `events` batches (message type 8) and their negotiation
/// through the `peersync/capability` declaration (docs/protocol.md
/// "Compressed batches").
@Suite struct CompressedBatchTests {
    let feeds = (1...4).map { FeedID(replicaID: "origin-\($0)") }

    /// Item-like events of four feeds interleaved, as a catch-up merges them.
    func batch(_ count: Int, id: UInt64 = 1) -> EventBatch {
        var heads = [UInt64](repeating: 0, count: feeds.count)
        let events = (0..<count).map { index in
            let origin = (index * 7 + index / 3) % feeds.count
            heads[origin] += 1
            return Event(
                eventID: eventID(id, index), feed: feeds[origin], seq: heads[origin],
                timeMs: 1_700_000_000_000 + Int64(index),
                entityType: "item", entityID: "i\(index / 5)",
                payload: #"{"quantity":\#(index % 1000),"type":"QuantityChanged"}"#)
        }
        return EventBatch(batchID: id, events: events)
    }

    /// A fixed id per batch and position, so that a corruption test is deterministic.
    func eventID(_ batch: UInt64, _ index: Int) -> UUID {
        var random = SplitMix64(seed: batch << 32 | UInt64(index))
        let b = withUnsafeBytes(of: (random.next(), random.next())) { Array($0) }
        return UUID(
            uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15])
        )
    }

    /// Both directions of one connection: each side's encoder and the other's decoder.
    struct Connection {
        var aEncoder: MessageEncoder
        var aDecoder: MessageDecoder
        var bEncoder: MessageEncoder
        var bDecoder: MessageDecoder

        init(a: Bool, b: Bool) {
            aEncoder = MessageEncoder(compression: a)
            aDecoder = MessageDecoder(compression: a)
            bEncoder = MessageEncoder(compression: b)
            bDecoder = MessageDecoder(compression: b)
        }

        /// A → B, as `ConnectionCodec` does it: the encoder learns what the
        /// other direction's decoder saw.
        mutating func aToB(_ message: Message) throws -> (bytes: [UInt8], decoded: Message) {
            aEncoder.peerAcceptsCompression = aDecoder.peerOffersCompression
            let bytes = aEncoder.encode(message)
            return (bytes, try bDecoder.decode(bytes))
        }

        mutating func bToA(_ message: Message) throws -> (bytes: [UInt8], decoded: Message) {
            bEncoder.peerAcceptsCompression = bDecoder.peerOffersCompression
            let bytes = bEncoder.encode(message)
            return (bytes, try aDecoder.decode(bytes))
        }

        /// Hello and the first cursor both ways, which carry the capabilities.
        mutating func open() throws {
            _ = try aToB(.hello(Hello(replicaID: "a", listenPort: 1)))
            _ = try bToA(.hello(Hello(replicaID: "b", listenPort: 2)))
            _ = try aToB(.cursor(VectorCursor()))
            _ = try bToA(.cursor(VectorCursor()))
        }
    }

    @Test func aBatchRoundTripsCompressedWhenBothSidesOfferIt() throws {
        var connection = Connection(a: true, b: true)
        try connection.open()
        for id in 1...3 {
            let sent = batch(2_000, id: UInt64(id))
            let (bytes, decoded) = try connection.aToB(.events(sent))
            #expect(bytes.first == 8, "compressed")
            #expect(decoded == .events(sent))
            var plainEncoder = MessageEncoder()
            let plain = plainEncoder.encode(.events(sent))
            #expect(bytes.count * 2 < plain.count, "\(bytes.count) compressed bytes for \(plain.count) plain")
        }
        // The feeds the compressed batches declared keep their indexes for plain messages.
        let (bytes, decoded) = try connection.aToB(.ack(batchID: 1, heads: [feeds[2]: 9]))
        #expect(bytes == [4, 0, 1, 1, 3, 9])  // no declarations: feed 3 is index 3 after the capability and feed 1
        #expect(decoded == .ack(batchID: 1, heads: [feeds[2]: 9]))
    }

    @Test func theCapabilityIsDeclaredOnceInTheFirstCursorByteForByte() throws {
        var encoder = MessageEncoder(compression: true)
        let first = encoder.encode(.cursor(VectorCursor()))
        let expected: [UInt8] =
            [2, 1, 0, 19] + Array("peersync/capability".utf8) + [4] + Array("zstd".utf8) + [0]
        #expect(first == expected)
        #expect(encoder.encode(.cursor(VectorCursor())) == [2, 0, 0], "the idle round is unchanged")
        #expect(encoder.encode(.cursor([feeds[0]: 5])).prefix(3) == [2, 1, 1], "the first feed is index 1")
    }

    @Test func aSideThatDoesNotOfferItGetsAndSendsPlainBatches() throws {
        for (a, b) in [(true, false), (false, true), (false, false)] {
            var connection = Connection(a: a, b: b)
            try connection.open()
            let sent = batch(2_000)
            let (toB, decodedByB) = try connection.aToB(.events(sent))
            let (toA, decodedByA) = try connection.bToA(.events(batch(2_000)))
            #expect(toB.first == 3 && toA.first == 3, "plain both ways for a \(a), b \(b)")
            #expect(decodedByB == .events(sent))
            if case .events(let received) = decodedByA { #expect(received.events.count == 2_000) }
        }
    }

    @Test func aDecoderThatDidNotOfferItRefusesACompressedMessage() throws {
        var connection = Connection(a: true, b: true)
        try connection.open()
        let (bytes, _) = try connection.aToB(.events(batch(500)))
        #expect(bytes.first == 8)
        var plainOnly = MessageDecoder()
        #expect(throws: WireError.malformed("compressed message, but this node did not offer compression")) {
            try plainOnly.decode(bytes)
        }
    }

    @Test func aLiveEventAndSmallBatchesStayPlain() throws {
        var connection = Connection(a: true, b: true)
        try connection.open()
        for count in [1, 2, 5] {
            let sent = batch(count)
            let (bytes, decoded) = try connection.aToB(.events(sent))
            #expect(bytes.first == 3, "\(count) event(s): \(bytes.count) bytes, plain")
            #expect(bytes.count < MessageEncoder.compressionThreshold)
            #expect(decoded == .events(sent))
        }
    }

    /// The compressed message of a batch, from a connection where both sides offer it.
    func compressedMessage(_ count: Int) throws -> (bytes: [UInt8], decoder: MessageDecoder) {
        var connection = Connection(a: true, b: true)
        try connection.open()
        connection.aEncoder.peerAcceptsCompression = true
        let bytes = connection.aEncoder.encode(.events(batch(count)))
        try #require(bytes.first == 8)
        return (bytes, connection.bDecoder)
    }

    @Test func aCorruptCompressedMessageIsAProtocolError() throws {
        let (bytes, decoder) = try compressedMessage(1_000)
        // 64 bytes overwritten in the zstd frame: a clear error (a corrupt
        // frame, or content that is not a valid batch), never a crash.
        for position in [bytes.count / 4, bytes.count / 2, bytes.count * 3 / 4] {
            var corrupt = bytes
            for index in position..<min(position + 64, bytes.count) { corrupt[index] = 0xFF }
            var copy = decoder
            #expect(throws: WireError.self, "overwritten at \(position)") { try copy.decode(corrupt) }
        }
        var copy = decoder
        #expect(throws: WireError.self) { try copy.decode(Array(bytes.dropLast(7))) }
        copy = decoder
        #expect(throws: WireError.malformed("compressed body is not exactly one zstd frame")) {
            try copy.decode(bytes + [0])
        }
    }

    /// A zstd frame header (magic, descriptor) declaring `size` bytes of content, then one empty raw block.
    func forgedFrame(declaring size: UInt64?) -> [UInt8] {
        let magic: [UInt8] = [0x28, 0xB5, 0x2F, 0xFD]
        guard let size else {
            // Descriptor 0x00: no content size, a window descriptor, then a last empty raw block.
            return [8] + magic + [0x00, 0x58, 0x01, 0x00, 0x00]
        }
        // Descriptor 0xE0: 8-byte content size, single segment.
        return [8] + magic + [0xE0] + withUnsafeBytes(of: size.littleEndian, Array.init) + [0x01, 0x00, 0x00]
    }

    @Test func aDeclaredSizeOverTheLimitOrMissingIsRefusedBeforeDecompressing() throws {
        let (_, decoder) = try compressedMessage(1_000)
        let limit = MessageDecoder.maximumDecompressedSize
        for size: UInt64 in [UInt64(limit) + 1, 1 << 40, UInt64.max - 2] {
            var copy = decoder
            #expect(
                throws: WireError.malformed("compressed body declares \(size) bytes, over the limit of \(limit)")
            ) { try copy.decode(forgedFrame(declaring: size)) }
        }
        var copy = decoder
        #expect(throws: WireError.malformed("compressed body does not declare its decompressed size")) {
            try copy.decode(forgedFrame(declaring: nil))
        }
        copy = decoder
        #expect(throws: WireError.malformed("compressed body is not a zstd frame")) {
            try copy.decode([8, 1, 2, 3, 4, 5, 6, 7, 8])
        }
        // A declared size within the limit whose content is missing.
        copy = decoder
        #expect(throws: WireError.self) { try copy.decode(forgedFrame(declaring: 1_000)) }
    }

    @Test func onlyEventsMayBeCompressed() throws {
        let (_, decoder) = try compressedMessage(1_000)
        let cursor = Zstd.compress([2, 0, 0], level: 1, prefix: 8)
        var copy = decoder
        #expect(throws: WireError.malformed("compressed message holds type 2; only events and bases may be compressed"))
        {
            try copy.decode(cursor)
        }
        copy = decoder
        #expect(throws: WireError.malformed("compressed message holds type 8; only events and bases may be compressed"))
        {
            try copy.decode(Zstd.compress(cursor, level: 1, prefix: 8))
        }
    }

    @Test func aCapabilityIndexIsNotAFeed() throws {
        var decoder = MessageDecoder(compression: true)
        _ = try decoder.decode(MessageEncoder(compression: true).encodeFirstCursor())
        #expect(decoder.peerOffersCompression)
        #expect(throws: WireError.malformed("feed 0 is a capability")) { try decoder.decode([2, 0, 1, 0, 5]) }
    }

    @Test func anUnknownCapabilityIsIgnored() throws {
        var decoder = MessageDecoder(compression: true)
        let message: [UInt8] =
            [2, 1, 0, 19] + Array("peersync/capability".utf8) + [5] + Array("later".utf8) + [0]
        #expect(try decoder.decode(message) == .cursor(VectorCursor()))
        #expect(!decoder.peerOffersCompression)
    }
}

extension MessageEncoder {
    fileprivate func encodeFirstCursor() -> [UInt8] {
        var copy = self
        return copy.encode(.cursor(VectorCursor()))
    }
}
