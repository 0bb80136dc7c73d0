import PeerNet
import Replica
import Testing

@testable import SyncProtocol

/// `nextDeadline` is kept current by the inputs instead of a pass over
/// every connection per call (a relay asks after every message of 1,000
/// replicas): it must always equal what a full pass says.
@Suite struct PeerManagerDeadlineCacheTests {
    func address(_ index: Int) -> PeerAddress { PeerAddress(host: "10.0.0.\(index)", port: 4100) }

    /// The deadline a full pass over `peers` computes now.
    func recomputed(_ peers: PeerManager) -> Milliseconds? {
        var fresh = peers
        fresh.refreshDeadlines()
        return fresh.nextDeadline
    }

    @Test func hearingAConnectionThatIsNotNextToGoSilentLeavesTheDeadline() {
        var peers = PeerManager(replicaID: "m")
        _ = peers.connected(1, dialed: nil, now: 1_000)
        _ = peers.connected(2, dialed: nil, now: 2_000)
        let firstSilentAt = 1_000 + peers.configuration.deadAfterMs + 1
        peers.heard(2, now: 3_000)
        #expect(peers.nextDeadline == firstSilentAt)
        peers.heard(1, now: 4_000)
        #expect(peers.nextDeadline == 3_000 + peers.configuration.deadAfterMs + 1, "connection 2 is next now")
    }

    @Test(arguments: 0..<20 as Range<UInt64>)
    func theDeadlineAlwaysEqualsAFullPass(seed: UInt64) {
        var random = SplitMix64(seed: seed)
        var configuration = PeerManager.Configuration()
        configuration.maxOutbound = Int(random.next() % 3) + 1
        configuration.maxConnections = Int(random.next() % 6) + 1
        configuration.rotateEveryMs = random.next() % 2 == 0 ? nil : 2_000
        configuration.topology = TopologyMode.allCases[Int(random.next() % 3)]
        var peers = PeerManager(replicaID: "m", configuration: configuration, seed: seed)
        var now: Milliseconds = 0
        var nextID: ConnectionID = 1
        for step in 0..<400 {
            now += Milliseconds(random.next() % 500)
            let target = address(Int(random.next() % 6) + 2)
            switch random.next() % 7 {
            case 0:
                let role: NodeRole? = random.next() % 2 == 0 ? (random.next() % 2 == 0 ? .relay : .peer) : nil
                if random.next() % 2 == 0 {
                    peers.addPeer(
                        target, source: PeerSource.allCases[Int(random.next() % 3)],
                        replicaID: "r\(random.next() % 4)", role: role, now: now)
                } else {
                    // A peer exchange: several addresses, the deadlines worked out once.
                    let adverts = (0..<Int(random.next() % 3) + 1).map { _ in
                        PeerAdvert(
                            replicaID: "r\(random.next() % 4)", address: address(Int(random.next() % 6) + 2), role: role
                        )
                    }
                    peers.addPeers(adverts, source: .exchanged, now: now)
                }
            case 1: peers.dialFailed(target, reason: "refused", now: now)
            case 2:
                _ = peers.connected(nextID, dialed: random.next() % 2 == 0 ? target : nil, now: now)
                nextID += 1
            case 3:
                if let id = peers.connections.keys.randomElement(using: &random) {
                    _ = peers.identified(id, replicaID: "r\(random.next() % 4)", now: now)
                }
            case 4:
                if let id = peers.connections.keys.randomElement(using: &random) { peers.disconnected(id, now: now) }
            case 5:
                _ = peers.tick(now: now)
            default:
                if let id = peers.connections.keys.randomElement(using: &random) { peers.heard(id, now: now) }
            }
            #expect(peers.nextDeadline == recomputed(peers), "seed \(seed), step \(step)")
        }
    }
}
