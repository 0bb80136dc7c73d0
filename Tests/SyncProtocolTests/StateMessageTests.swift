import Replica
import Testing

@testable import SyncProtocol

@Suite struct StateMessageTests {
    let hash = StateHash(bytes: Array(0..<32))!

    @Test func aStateMessageIsTypeSevenACountAndThirtyTwoRawBytes() {
        var encoder = MessageEncoder()
        let bytes = encoder.encode(.state(StateSummary(eventCount: 300, hash: hash)))
        #expect(bytes == [7, 0xAC, 0x02] + Array(0..<32))
    }

    @Test func aStateMessageSurvivesEncoding() throws {
        var encoder = MessageEncoder()
        var decoder = MessageDecoder()
        let messages: [Message] = [
            .state(StateSummary(eventCount: 0, hash: hash)),
            .state(StateSummary(eventCount: Int64.max, hash: StateHash(bytes: Array(repeating: 0xFF, count: 32))!)),
        ]
        #expect(try messages.map { try decoder.decode(encoder.encode($0)) } == messages)
    }

    @Test("domain versions travel at the end of state, only to a peer that declared it reads them")
    func domainVersionsTravelToAPeerThatReadsThem() throws {
        let summary = StateSummary(eventCount: 3, hash: hash, domains: ["inspection": 2, "meter": 1])
        // Both sides declare the capability in their first cursor.
        var aEncoder = MessageEncoder(domainVersions: true)
        var bDecoder = MessageDecoder(domainVersions: true)
        var bEncoder = MessageEncoder(domainVersions: true)
        var aDecoder = MessageDecoder(domainVersions: true)
        _ = try bDecoder.decode(aEncoder.encode(.cursor(VectorCursor())))
        _ = try aDecoder.decode(bEncoder.encode(.cursor(VectorCursor())))
        #expect(bDecoder.peerOffersDomainVersions && aDecoder.peerOffersDomainVersions)
        aEncoder.peerAcceptsDomainVersions = aDecoder.peerOffersDomainVersions
        let bytes = aEncoder.encode(.state(summary))
        #expect(
            bytes == [7, 3] + Array(0..<32) + [2, 10] + Array("inspection".utf8) + [2, 5] + Array("meter".utf8) + [1])
        #expect(try bDecoder.decode(bytes) == .state(summary))
        // To a peer of an older build (no capability) the message is what it was.
        var plain = MessageEncoder(domainVersions: true)
        #expect(plain.encode(.state(summary)) == [7, 3] + Array(0..<32))
        // A repeated type is refused.
        #expect(throws: WireError.self) {
            try bDecoder.decode([7, 3] + Array(0..<32) + [2, 1, 0x61, 1, 1, 0x61, 2])
        }
    }

    @Test func aShortHashIsRefused() {
        var decoder = MessageDecoder()
        #expect(throws: WireError.truncated("state hash")) { try decoder.decode([7, 5] + Array(0..<31)) }
    }

    @Test func aMissingCountIsRefused() {
        var decoder = MessageDecoder()
        #expect(throws: WireError.self) { try decoder.decode([7]) }
    }

    @Test func aStateMessageWithTrailingBytesIsRefused() {
        var decoder = MessageDecoder()
        #expect(throws: WireError.malformed("1 trailing byte(s) after state")) {
            try decoder.decode([7, 5] + Array(0..<32) + [0])
        }
    }

    @Test func aCountAboveInt64IsRefused() {
        var decoder = MessageDecoder()
        // 2^63 as a varint: nine 0x80 continuation bytes would be 2^63 with a final 0x01.
        let count: [UInt8] = [0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01]
        #expect(throws: WireError.malformed("event count 9223372036854775808")) {
            try decoder.decode([7] + count + Array(0..<32))
        }
    }

    @Test func typesAfterStateAreStillRefused() {
        var decoder = MessageDecoder()
        #expect(throws: WireError.unknownMessageType(20)) { try decoder.decode([20]) }
        // Type 8 (a compressed batch) only from a peer whose offer this side matched.
        #expect(throws: WireError.malformed("compressed message, but this node did not offer compression")) {
            try decoder.decode([8])
        }
    }

    @Test func aHashReadsBackFromItsHex() throws {
        let hex = "00" + String(repeating: "ab", count: 30) + "FF"
        let parsed = try #require(StateHash(hex: hex))
        #expect(parsed.bytes.first == 0 && parsed.bytes.last == 0xFF)
        #expect(parsed.hex == hex.lowercased())
        #expect(StateHash(hex: String(hex.dropLast())) == nil)
        #expect(StateHash(hex: "g" + hex.dropFirst()) == nil)
        #expect(StateHash(bytes: [1, 2, 3]) == nil)
    }
}
