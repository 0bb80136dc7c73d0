import PeerNet
import Replica
import Testing

@testable import SyncProtocol

/// The peer manager's timers are deadlines: `nextDeadline` says when `tick`
/// next has work, so a shell sleeps until then instead of ticking at 20 Hz.
@Suite struct PeerManagerDeadlineTests {
    func address(_ index: Int) -> PeerAddress { PeerAddress(host: "10.0.0.\(index)", port: 4100) }

    @Test func anIdleManagerHasNoDeadline() {
        let peers = PeerManager(replicaID: "m")
        #expect(peers.nextDeadline == nil)
    }

    @Test func aNewAddressIsDueAtOnceAndAFailedOneAfterItsBackoff() {
        var peers = PeerManager(replicaID: "m")
        peers.addPeer(address(2), source: .configured, now: 500)
        #expect(peers.nextDeadline == 500)
        #expect(peers.tick(now: 500) == [.dial(address(2))])
        #expect(peers.nextDeadline == nil, "dialing: only the dial's outcome can change anything")
        peers.dialFailed(address(2), reason: "refused", now: 700)
        #expect(peers.nextDeadline == 1_700)
    }

    @Test func anOpenConnectionIsDueWhenItWouldCountAsSilent() {
        var peers = PeerManager(replicaID: "m")
        _ = peers.connected(7, dialed: nil, now: 1_000)
        let silentAt = 1_000 + peers.configuration.deadAfterMs + 1
        #expect(peers.nextDeadline == silentAt)
        peers.heard(7, now: 3_000)
        #expect(peers.nextDeadline == silentAt + 2_000)
        #expect(peers.tick(now: silentAt + 2_000).count == 1)
        #expect(peers.nextDeadline == nil, "a connection being closed is not due again")
    }

    /// Whatever happened, a deadline at or before the time of a tick means
    /// work for the next tick: ticking at it always does something (a
    /// directive, or the fallback from the hub to the mesh), and
    /// after a few such ticks the deadline lies ahead. A shell that sleeps
    /// until the deadline never spins.
    @Test(arguments: 0..<40 as Range<UInt64>)
    func aDueDeadlineAlwaysHasWork(seed: UInt64) {
        var random = SplitMix64(seed: seed)
        var configuration = PeerManager.Configuration()
        configuration.maxOutbound = Int(random.next() % 3) + 1
        configuration.maxConnections = Int(random.next() % 4) + 1
        configuration.rotateEveryMs = random.next() % 2 == 0 ? nil : 2_000
        configuration.topology = TopologyMode.allCases[Int(random.next() % 3)]
        configuration.relayFallbackMs = Milliseconds(random.next() % 4_000)
        let role: NodeRole = random.next() % 4 == 0 ? .relay : .peer
        var peers = PeerManager(replicaID: "m", role: role, configuration: configuration, seed: seed)
        func randomRole() -> NodeRole { random.next() % 3 == 0 ? .relay : .peer }
        var now: Milliseconds = 0
        var nextID: ConnectionID = 1
        for _ in 0..<300 {
            now += Milliseconds(random.next() % 700)
            let target = address(Int(random.next() % 6) + 2)
            switch random.next() % 6 {
            case 0:
                let source = PeerSource.allCases[Int(random.next() % 3)]
                let known = random.next() % 2 == 0 ? randomRole() : nil
                peers.addPeer(target, source: source, replicaID: "r\(random.next() % 4)", role: known, now: now)
            case 1: peers.dialFailed(target, reason: "refused", now: now)
            case 2:
                _ = peers.connected(nextID, dialed: random.next() % 2 == 0 ? target : nil, now: now)
                _ = peers.identified(nextID, replicaID: "r\(random.next() % 4)", role: randomRole(), now: now)
                nextID += 1
            case 3:
                if let id = peers.connections.keys.randomElement(using: &random) { peers.disconnected(id, now: now) }
            case 4: if let id = peers.connections.keys.randomElement(using: &random) { peers.heard(id, now: now) }
            default: break
            }
            _ = peers.tick(now: now)
            var immediateTicks = 0
            while let deadline = peers.nextDeadline, deadline <= now {
                immediateTicks += 1
                guard immediateTicks <= 5 else {
                    Issue.record("seed \(seed): the deadline stays at \(deadline) after 5 ticks at \(now)")
                    return
                }
                let hubState = peers.hubState
                let directives = peers.tick(now: now)
                #expect(
                    !directives.isEmpty || peers.hubState != hubState,
                    "seed \(seed): a tick at the due deadline \(deadline) did nothing")
            }
        }
    }
}
