import CSodium
import Testing

@testable import SyncProtocol

@Suite struct SecuritySealedFrameTests {
    let keys: (initiator: SessionKeys, responder: SessionKeys)

    init() throws {
        var exchange = HandshakeExchange(initiatorKey: fixedClusterKey, responderKey: fixedClusterKey)
        exchange.run()
        keys = (try #require(exchange.initiatorKeys), try #require(exchange.responderKeys))
    }

    @Test func messagesRoundTripInBothDirectionsAndInOrder() throws {
        let messages: [[UInt8]] = [[], [0], Array("cursor".utf8), Array(repeating: 0xAB, count: 70_000)]
        for message in messages {
            let frame = keys.initiator.sealer.seal(message)
            #expect(frame.type == .sealed && frame.body.count == message.count + 16)
            #expect(try keys.responder.opener.open(frame) == message)
            #expect(try keys.initiator.opener.open(keys.responder.sealer.seal(message)) == message)
        }
        #expect(keys.initiator.sealer.sealedCount == 4 && keys.responder.opener.openedCount == 4)
    }

    @Test func theNonceIsFourZeroBytesAndTheLittleEndianCounter() throws {
        let key = SecretBytes(copying: (0..<32).map { UInt8($0) })
        let sealer = SessionKeys(sending: key, receiving: key, transcript: []).sealer
        _ = sealer.seal([1])
        let frame = sealer.seal(Array("hi".utf8))
        var expected = [UInt8](repeating: 0, count: 2 + 16)
        var length: UInt64 = 0
        let nonce: [UInt8] = [0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0]
        let status = crypto_aead_chacha20poly1305_ietf_encrypt(
            &expected, &length, Array("hi".utf8), 2, [Frame.Kind.sealed.rawValue], 1, nil, nonce,
            (0..<32).map { UInt8($0) })
        #expect(status == 0)
        #expect(frame.body == expected)
    }

    @Test func oneFlippedByteAnywhereFailsAuthentication() throws {
        let frame = keys.initiator.sealer.seal(Array("QuantityChanged 8".utf8))
        for index in frame.body.indices {
            var tampered = frame
            tampered.body[index] ^= 0x01
            #expect(throws: SecurityError.sealedFrameUnauthentic(counter: 0), "byte \(index)") {
                try keys.responder.opener.open(tampered)
            }
        }
        #expect(try keys.responder.opener.open(frame) == Array("QuantityChanged 8".utf8))
    }

    @Test func aReplayedFrameIsRefused() throws {
        let frame = keys.initiator.sealer.seal([1, 2, 3])
        _ = try keys.responder.opener.open(frame)
        #expect(throws: SecurityError.sealedFrameUnauthentic(counter: 1)) { try keys.responder.opener.open(frame) }
    }

    @Test func aReorderedFrameIsRefusedAndTheRightOneStillOpens() throws {
        let first = keys.initiator.sealer.seal([1])
        let second = keys.initiator.sealer.seal([2])
        #expect(throws: SecurityError.sealedFrameUnauthentic(counter: 0)) { try keys.responder.opener.open(second) }
        #expect(try keys.responder.opener.open(first) == [1])
        #expect(try keys.responder.opener.open(second) == [2])
    }

    @Test func aTruncatedFrameIsRefused() {
        var frame = keys.initiator.sealer.seal(Array("payload".utf8))
        frame.body.removeLast()
        #expect(throws: SecurityError.sealedFrameUnauthentic(counter: 0)) { try keys.responder.opener.open(frame) }
        #expect(throws: SecurityError.sealedFrameTruncated(size: 15)) {
            try keys.responder.opener.open(Frame(type: .sealed, body: Array(repeating: 0, count: 15)))
        }
    }

    @Test func aFrameReflectedBackToItsSenderIsRefused() {
        let frame = keys.initiator.sealer.seal([1])
        #expect(throws: SecurityError.sealedFrameUnauthentic(counter: 0)) { try keys.initiator.opener.open(frame) }
    }

    @Test func onlySealedFramesAreOpened() {
        let frame = keys.initiator.sealer.seal([1])
        #expect(throws: SecurityError.notASealedFrame(.reject)) {
            try keys.responder.opener.open(Frame(type: .reject, body: frame.body))
        }
    }

    @Test func errorsSayWhatHappened() {
        #expect(
            SecurityError.sealedFrameUnauthentic(counter: 3).description
                == "sealed frame #3 failed authentication: it was tampered with, replayed, reordered or truncated")
    }
}
