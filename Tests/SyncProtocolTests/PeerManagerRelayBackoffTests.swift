import PeerNet
import Testing

@testable import SyncProtocol

/// A relay that is back is dialed again within seconds: its backoff is
/// capped, and discovery announcing it again makes it due at once.
@Suite struct PeerManagerRelayBackoffTests {
    let relay = PeerAddress(host: "10.0.0.9", port: 4100)
    let peer = PeerAddress(host: "10.0.0.2", port: 4100)

    /// The gaps between failed dials of `address` and its next dial, as the time moves in 100 ms steps.
    func redialGaps(_ peers: inout PeerManager, _ address: PeerAddress, failures: Int) -> [Milliseconds] {
        var now: Milliseconds = 0
        var gaps: [Milliseconds] = []
        _ = peers.tick(now: now)
        for _ in 0..<failures {
            peers.dialFailed(address, reason: "refused", now: now)
            let failedAt = now
            while !peers.tick(now: now).contains(.dial(address)) { now += 100 }
            gaps.append(now - failedAt)
        }
        return gaps
    }

    @Test func failedDialsToARelayBackOffAtMostTwoSeconds() {
        var peers = PeerManager(replicaID: "m")
        peers.addPeer(relay, source: .discovered, replicaID: "r", role: .relay, now: 0)
        #expect(redialGaps(&peers, relay, failures: 5) == [1_000, 2_000, 2_000, 2_000, 2_000])
    }

    @Test func aRelayLearnedByExchangeBacksOffLikeAnyRelay() {
        var peers = PeerManager(replicaID: "m")
        peers.addPeer(relay, source: .exchanged, replicaID: "r", role: .relay, now: 0)
        #expect(redialGaps(&peers, relay, failures: 4) == [1_000, 2_000, 2_000, 2_000])
    }

    @Test func aPlainPeerKeepsTheLongBackoff() {
        var peers = PeerManager(replicaID: "m")
        peers.addPeer(peer, source: .discovered, replicaID: "p", role: .peer, now: 0)
        #expect(redialGaps(&peers, peer, failures: 5) == [1_000, 2_000, 5_000, 10_000, 30_000])
    }

    @Test func theCapIsConfigured() {
        var configuration = PeerManager.Configuration()
        configuration.relayBackoffCapMs = 500
        var peers = PeerManager(replicaID: "m", configuration: configuration)
        peers.addPeer(relay, source: .configured, role: .relay, now: 0)
        #expect(redialGaps(&peers, relay, failures: 3) == [500, 500, 500])
    }

    @Test func aRelayWhoseHelloSaidSoIsRedialedWithinTwoSecondsOfGoingAway() {
        var peers = PeerManager(replicaID: "m")
        peers.addPeer(relay, source: .configured, now: 0)
        _ = peers.tick(now: 0)
        _ = peers.connected(1, dialed: relay, now: 0)
        _ = peers.identified(1, replicaID: "r", role: .relay, now: 0)
        peers.disconnected(1, now: 10_000)
        // It restarts: the first dials fail, and the gaps stay at 2 s however many fail.
        var now: Milliseconds = 10_000
        var dials: [Milliseconds] = []
        while dials.count < 4 {
            if peers.tick(now: now).contains(.dial(relay)) {
                dials.append(now)
                peers.dialFailed(relay, reason: "connection refused", now: now)
            }
            now += 100
        }
        #expect(dials == [11_000, 13_000, 15_000, 17_000])
    }

    @Test func discoveryAnnouncingAWaitingRelayMakesItDueAtOnce() {
        var peers = PeerManager(replicaID: "m")
        peers.addPeer(relay, source: .discovered, replicaID: "r", role: .relay, now: 0)
        _ = peers.tick(now: 0)
        peers.dialFailed(relay, reason: "refused", now: 0)
        #expect(peers.nextDeadline == 1_000)
        peers.addPeer(relay, source: .discovered, replicaID: "r", role: .relay, now: 300)
        #expect(peers.nextDeadline == 300)
        #expect(peers.tick(now: 300) == [.dial(relay)])
    }

    @Test func discoveryAnnouncingAWaitingPeerLeavesItsBackoff() {
        var peers = PeerManager(replicaID: "m")
        peers.addPeer(peer, source: .discovered, replicaID: "p", role: .peer, now: 0)
        _ = peers.tick(now: 0)
        peers.dialFailed(peer, reason: "refused", now: 0)
        peers.addPeer(peer, source: .discovered, replicaID: "p", role: .peer, now: 300)
        #expect(peers.tick(now: 300).isEmpty)
        #expect(peers.nextDeadline == 1_000)
    }
}
