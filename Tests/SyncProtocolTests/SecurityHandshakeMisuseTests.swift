import Testing

@testable import SyncProtocol

@Suite struct SecurityHandshakeMisuseTests {
    func responder() -> Handshake {
        Handshake(role: .responder, clusterKey: fixedClusterKey, ephemeral: Handshake.ephemeralKeyPair())
    }

    func waitingInitiator() -> Handshake {
        var initiator = Handshake(
            role: .initiator, clusterKey: fixedClusterKey, ephemeral: Handshake.ephemeralKeyPair())
        _ = initiator.start()
        return initiator
    }

    @Test func everyTruncatedInitFailsWithAReasonAndNoCrash() {
        let whole = handshakeInitFrame().body
        for length in 0..<whole.count {
            var machine = responder()
            let directives = machine.receive(Frame(type: .handshakeInit, body: Array(whole.prefix(length))))
            let failure = directives.failure
            #expect(failure?.kind == .malformedFrame, "length \(length)")
            #expect(directives.rejectReason != nil && !directives.establishes)
            #expect(machine.failure == failure)
        }
    }

    @Test func anInitWithoutTheMagicIsNotAPeerSyncHandshake() {
        var machine = responder()
        let directives = machine.receive(Frame(type: .handshakeInit, body: Array("HTTP/1.1 200 OK\r\n".utf8)))
        #expect(directives.failure?.reason.contains("not a PeerSync handshake") == true)
    }

    @Test func anInitWithTrailingBytesIsMalformed() {
        var machine = responder()
        let directives = machine.receive(Frame(type: .handshakeInit, body: handshakeInitFrame().body + [0]))
        #expect(directives.failure?.reason == "malformed handshake init: 39 bytes, expected 38")
    }

    @Test func garbageRepliesAndFinishesFailWithoutCrashing() {
        var generator = SystemRandomNumberGenerator()
        for length in [0, 1, 2, 3, 34, 65, 66, 67, 200] {
            var initiator = waitingInitiator()
            let garbage = [0, 1] + (0..<max(length - 2, 0)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let directives = initiator.receive(Frame(type: .handshakeReply, body: Array(garbage.prefix(length))))
            #expect(directives.failure != nil, "reply of \(length) bytes")
            #expect(!directives.establishes)
        }
        for length in [0, 31, 33] {
            var machine = responder()
            _ = machine.receive(handshakeInitFrame())
            let directives = machine.receive(Frame(type: .handshakeFinish, body: Array(repeating: 0, count: length)))
            #expect(directives.failure?.kind == .malformedFrame, "finish of \(length) bytes")
        }
    }

    @Test func aLowOrderPublicKeyIsRefused() {
        var machine = responder()
        let directives = machine.receive(
            Frame(type: .handshakeInit, body: Array("PSYN".utf8) + [0, 5] + Array(repeating: 0, count: 32)))
        #expect(directives.failure?.kind == .invalidPublicKey)
        #expect(directives.rejectReason == "invalid ephemeral public key")
    }

    @Test func theResponderSendsOnlyItsReplyBeforeTheFinish() {
        var machine = responder()
        let directives = machine.receive(handshakeInitFrame())
        #expect(directives.count == 1)
        #expect(
            directives.first.map { if case .send(let frame) = $0 { frame.type == .handshakeReply } else { false } }
                == true)
    }

    @Test func applicationDataBeforeTheFinishEndsTheHandshake() {
        var machine = responder()
        _ = machine.receive(handshakeInitFrame())
        let directives = machine.receive(Frame(type: .sealed, body: Array(repeating: 1, count: 40)))
        #expect(directives.failure?.kind == .unexpectedFrame)
        #expect(directives.failure?.reason.contains("awaitingFinish") == true)
        #expect(directives.rejectReason == "unexpected sealed frame during the handshake")
    }

    @Test func anInitiatorRefusesAnInit() {
        var initiator = waitingInitiator()
        let directives = initiator.receive(handshakeInitFrame())
        #expect(directives.failure?.reason == "unexpected handshakeInit frame in state awaitingReply")
    }

    @Test func startingTwiceIsMisuseAndSaysTheState() {
        var initiator = waitingInitiator()
        let directives = initiator.start()
        #expect(directives.failure?.kind == .misuse)
        #expect(directives.failure?.reason == "start() called in state awaitingReply")
        #expect(directives.rejectReason == nil)
    }

    @Test func aFrameAfterTheEndChangesNothing() {
        var exchange = HandshakeExchange(initiatorKey: fixedClusterKey, responderKey: fixedClusterKey)
        exchange.run()
        let directives = exchange.responder.receive(Frame(type: .handshakeFinish, body: []))
        #expect(directives.failure?.kind == .misuse)
        #expect(directives.count == 1)
        #expect(exchange.responder.isEstablished)
    }

    @Test func aRejectFromThePeerIsSanitisedAndBounded() {
        var initiator = waitingInitiator()
        let hostile = Array("no\u{1B}[31m".utf8) + Array(repeating: UInt8(ascii: "x"), count: 2000) + [0xFF]
        let directives = initiator.receive(Frame(type: .reject, body: hostile))
        let reason = directives.failure?.reason ?? ""
        #expect(reason.hasPrefix("peer refused: no?[31m"))
        #expect(reason.utf8.count <= "peer refused: ".utf8.count + 512)
        #expect(directives.rejectReason == nil)
    }

    @Test func aRejectWeSendIsCutToFiveHundredTwelveBytes() {
        let frame = HandshakeFailure.rejectFrame(String(repeating: "é", count: 400))
        #expect(frame.body.count == 512)
        #expect(String(validating: frame.body, as: UTF8.self) != nil)
    }
}
