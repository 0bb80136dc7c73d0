import Testing

@testable import SyncProtocol

@Suite struct SecurityHandshakeTests {
    @Test func twoNodesWithTheSameKeyAgreeOnCrosswiseSessionKeys() throws {
        var exchange = HandshakeExchange(initiatorKey: fixedClusterKey, responderKey: fixedClusterKey)
        exchange.run()
        let initiator = try #require(exchange.initiatorKeys)
        let responder = try #require(exchange.responderKeys)
        #expect(exchange.initiator.isEstablished && exchange.responder.isEstablished)
        #expect(exchange.initiatorFailure == nil && exchange.responderFailure == nil)
        #expect(try responder.opener.open(initiator.sealer.seal(Array("to R".utf8))) == Array("to R".utf8))
        #expect(try initiator.opener.open(responder.sealer.seal(Array("to I".utf8))) == Array("to I".utf8))
        // Each direction has its own key.
        #expect(!initiator.sealer.key.isEqual(to: initiator.opener.key))
    }

    @Test func theHandshakeIsThreeFramesOfTheDocumentedSizes() {
        var exchange = HandshakeExchange(initiatorKey: fixedClusterKey, responderKey: fixedClusterKey)
        exchange.run()
        #expect(exchange.wire.map(\.from) == [.initiator, .responder, .initiator])
        #expect(exchange.wire.map(\.frame.type) == [.handshakeInit, .handshakeReply, .handshakeFinish])
        #expect(exchange.wire.map(\.frame.body.count) == [38, 66, 32])
        #expect(Array(exchange.wire[0].frame.body.prefix(6)) == Array("PSYN".utf8) + [0, 5])
        #expect(Array(exchange.wire[1].frame.body.prefix(2)) == [0, 5])
    }

    @Test func everyConnectionGetsFreshKeys() throws {
        var first = HandshakeExchange(initiatorKey: fixedClusterKey, responderKey: fixedClusterKey)
        var second = HandshakeExchange(initiatorKey: fixedClusterKey, responderKey: fixedClusterKey)
        first.run()
        second.run()
        let keys = try #require(first.initiatorKeys)
        #expect(try keys != #require(second.initiatorKeys))
        #expect(throws: SecurityError.sealedFrameUnauthentic(counter: 0)) {
            try second.responderKeys?.opener.open(keys.sealer.seal([1, 2, 3]))
        }
    }

    @Test func theMachineIsPureGivenItsEphemeralKeys() throws {
        func wire() throws -> [Frame] {
            var exchange = HandshakeExchange(
                initiatorKey: fixedClusterKey, responderKey: fixedClusterKey,
                initiatorEphemeral: try EphemeralKeyPair(seed: Array(repeating: 1, count: 32)),
                responderEphemeral: try EphemeralKeyPair(seed: Array(repeating: 2, count: 32)))
            exchange.run()
            return exchange.wire.map(\.frame)
        }
        #expect(try wire() == wire())
    }

    @Test func aWrongClusterKeyFailsBothSidesWithTheMismatchReason() throws {
        var exchange = HandshakeExchange(initiatorKey: fixedClusterKey, responderKey: ClusterKey.generate())
        exchange.run()
        let initiator = try #require(exchange.initiatorFailure)
        let responder = try #require(exchange.responderFailure)
        #expect(initiator.kind == .clusterKeyMismatch)
        #expect(initiator.reason.contains("cluster key mismatch"))
        #expect(initiator.rejectReason == "cluster key mismatch")
        #expect(responder.kind == .refusedByPeer)
        #expect(responder.reason == "peer refused: cluster key mismatch")
        #expect(exchange.initiatorKeys == nil && exchange.responderKeys == nil)
        #expect(exchange.wire.map(\.frame.type) == [.handshakeInit, .handshakeReply, .reject])
    }

    @Test func theResponderRefusesAFinishWithoutTheKey() {
        var responder = Handshake(
            role: .responder, clusterKey: fixedClusterKey, ephemeral: Handshake.ephemeralKeyPair())
        _ = responder.receive(handshakeInitFrame(key: ClusterKey.generate()))
        let directives = responder.receive(Frame(type: .handshakeFinish, body: Array(repeating: 7, count: 32)))
        #expect(directives.rejectReason == "cluster key mismatch")
        #expect(directives.failure?.kind == .clusterKeyMismatch)
        #expect(!directives.establishes && !responder.isEstablished)
    }

    @Test func aNewerInitiatorIsRefusedWithBothVersionsNamed() throws {
        var exchange = HandshakeExchange(
            initiatorKey: fixedClusterKey, responderKey: fixedClusterKey, initiatorVersion: 3, responderVersion: 2)
        exchange.run()
        let responder = try #require(exchange.responderFailure)
        let initiator = try #require(exchange.initiatorFailure)
        #expect(responder.kind == .incompatibleVersion)
        #expect(responder.rejectReason == "incompatible protocol version 3; this node speaks 2")
        #expect(responder.reason.contains("protocol version 3; this node speaks 2"))
        #expect(initiator.reason == "peer refused: incompatible protocol version 3; this node speaks 2")
        #expect(exchange.wire.map(\.frame.type) == [.handshakeInit, .reject])
    }

    @Test func theInitiatorChecksTheVersionInTheReply() {
        var initiator = Handshake(
            role: .initiator, clusterKey: fixedClusterKey, ephemeral: Handshake.ephemeralKeyPair())
        _ = initiator.start()
        let directives = initiator.receive(Frame(type: .handshakeReply, body: [0, 9] + Array(repeating: 9, count: 64)))
        #expect(directives.failure?.kind == .incompatibleVersion)
        #expect(directives.rejectReason == "incompatible protocol version 9; this node speaks \(WireProtocol.version)")
    }

    @Test func aVersionMismatchIsReportedEvenWhenTheInitHasAnotherLength() {
        var responder = Handshake(
            role: .responder, clusterKey: fixedClusterKey, ephemeral: Handshake.ephemeralKeyPair())
        let directives = responder.receive(Frame(type: .handshakeInit, body: Array("PSYN".utf8) + [0, 1, 1, 2, 3]))
        #expect(directives.failure?.kind == .incompatibleVersion)
    }
}
