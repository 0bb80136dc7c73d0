import PeerNet
import Testing

@testable import SyncProtocol

@Suite struct PeerManagerTests {
    let address = PeerAddress(host: "10.0.0.2", port: 4100)

    func manager(_ id: String = "m", configure: (inout PeerManager.Configuration) -> Void = { _ in }) -> PeerManager {
        var configuration = PeerManager.Configuration()
        configure(&configuration)
        return PeerManager(replicaID: id, configuration: configuration)
    }

    @Test func aNewPeerIsDialedAtTheNextTick() {
        var peers = manager()
        peers.addPeer(address, source: .configured, now: 0)
        #expect(peers.tick(now: 0) == [.dial(address)])
        #expect(peers.tick(now: 10).isEmpty)
    }

    @Test func failedDialsBackOffOneTwoFiveTenThenThirtySeconds() {
        var peers = manager()
        peers.addPeer(address, source: .configured, now: 0)
        var now: Milliseconds = 0
        var gaps: [Milliseconds] = []
        _ = peers.tick(now: now)
        for _ in 0..<6 {
            peers.dialFailed(address, reason: "refused", now: now)
            let failedAt = now
            while peers.tick(now: now).isEmpty { now += 100 }
            gaps.append(now - failedAt)
        }
        #expect(gaps == [1_000, 2_000, 5_000, 10_000, 30_000, 30_000])
    }

    @Test func aLostConnectionIsRedialedAfterOneSecond() {
        var peers = manager()
        peers.addPeer(address, source: .configured, now: 0)
        _ = peers.tick(now: 0)
        _ = peers.connected(1, dialed: address, now: 0)
        _ = peers.identified(1, replicaID: "p", now: 0)
        peers.disconnected(1, now: 5_000)
        #expect(peers.tick(now: 5_900).isEmpty)
        #expect(peers.tick(now: 6_000) == [.dial(address)])
    }

    @Test func simultaneousDialsKeepTheConnectionDialedByTheLowerID() {
        // "a" < "b": both ends keep the connection "a" dialed.
        var a = manager("a")
        var b = manager("b")
        let toB = PeerAddress(host: "b", port: 1)
        let toA = PeerAddress(host: "a", port: 1)
        a.addPeer(toB, source: .configured, now: 0)
        b.addPeer(toA, source: .configured, now: 0)
        _ = a.tick(now: 0)
        _ = b.tick(now: 0)
        // a's outbound is a:1 (= b's inbound b:2); b's outbound is b:1 (= a's inbound a:2).
        _ = a.connected(1, dialed: toB, now: 0)
        _ = a.connected(2, dialed: nil, now: 0)
        _ = b.connected(1, dialed: toA, now: 0)
        _ = b.connected(2, dialed: nil, now: 0)
        let aClosed = a.identified(1, replicaID: "b", now: 0) + a.identified(2, replicaID: "b", now: 0)
        let bClosed = b.identified(1, replicaID: "a", now: 0) + b.identified(2, replicaID: "a", now: 0)
        #expect(aClosed == [.close(2, reason: "duplicate connection to b")])
        #expect(bClosed == [.close(1, reason: "duplicate connection to a")])
    }

    @Test func aConnectedReplicaIsNotDialedAgainThroughAnotherAddress() {
        var peers = manager()
        peers.addPeer(address, source: .configured, now: 0)
        _ = peers.tick(now: 0)
        _ = peers.connected(1, dialed: address, now: 0)
        _ = peers.identified(1, replicaID: "p", now: 0)
        _ = peers.connected(2, dialed: nil, now: 1)
        _ = peers.identified(2, replicaID: "p", now: 1)
        #expect(peers.tick(now: 10_000).allSatisfy { if case .dial = $0 { false } else { true } })
    }

    @Test func aSilentPeerIsClosed() {
        var peers = manager { $0.deadAfterMs = 3_000 }
        _ = peers.connected(1, dialed: nil, now: 0)
        peers.heard(1, now: 2_000)
        #expect(peers.tick(now: 5_000).isEmpty)
        #expect(peers.tick(now: 5_001) == [.close(1, reason: "peer silent for 3001 ms")])
    }

    @Test func connectionsOverTheLimitAreRefused() {
        var peers = manager { $0.maxConnections = 1 }
        #expect(peers.connected(1, dialed: nil, now: 0).isEmpty)
        #expect(peers.connected(2, dialed: nil, now: 0) == [.close(2, reason: "too many connections (1)")])
    }

    @Test func dialingItselfRetiresTheAddress() {
        var peers = manager("me")
        peers.addPeer(address, source: .configured, now: 0)
        _ = peers.tick(now: 0)
        _ = peers.connected(1, dialed: address, now: 0)
        #expect(peers.identified(1, replicaID: "me", now: 0) == [.close(1, reason: "this address is this node itself")])
        peers.disconnected(1, now: 0)
        #expect(peers.tick(now: 100_000).isEmpty)
    }

    @Test func fanOutIsBoundedAndTheSameSeedPicksTheSamePeers() {
        func picks(seed: UInt64) -> [PeerManager.Directive] {
            var configuration = PeerManager.Configuration()
            configuration.maxOutbound = 3
            var peers = PeerManager(replicaID: "m", configuration: configuration, seed: seed)
            for port in 1...20 {
                peers.addPeer(PeerAddress(host: "h", port: UInt16(port)), source: .discovered, now: 0)
            }
            return peers.tick(now: 0)
        }
        #expect(picks(seed: 7).count == 3)
        #expect(picks(seed: 7) == picks(seed: 7))
    }

    @Test func aRemovedPeerIsNotRedialed() {
        var peers = manager()
        peers.addPeer(address, source: .discovered, now: 0)
        peers.removePeer(address)
        #expect(peers.tick(now: 0).isEmpty)
    }

    @Test func aNewReplicaAtAWithdrawnAddressConnectedInboundIsNotDialedAgain() {
        var peers = manager()
        peers.addPeer(address, source: .discovered, replicaID: "old", now: 0)
        peers.removePeer(address)
        _ = peers.connected(1, dialed: nil, now: 10)
        _ = peers.identified(1, replicaID: "new", now: 10)
        peers.addPeer(address, source: .discovered, replicaID: "new", now: 20)
        #expect(peers.targets[address]?.replicaID == "new")
        #expect(peers.tick(now: 30).isEmpty)
    }

    @Test func anotherAddressOfAReplicaThatLeftWaitsABackoff() {
        var peers = manager()
        _ = peers.connected(1, dialed: nil, now: 0)
        _ = peers.identified(1, replicaID: "p", now: 0)
        peers.addPeer(address, source: .exchanged, replicaID: "p", now: 0)
        #expect(peers.tick(now: 10).isEmpty)
        peers.disconnected(1, now: 100)
        #expect(peers.tick(now: 200).isEmpty)
        #expect(peers.tick(now: 1_100) == [.dial(address)])
    }
}
