import PeerNet
import Testing

@testable import SyncProtocol

/// Mesh and hub (`PeerManager+Topology`): whom a replica dials when relays
/// are around, what it closes, and when it falls back and returns.
@Suite struct PeerManagerTopologyTests {
    let relay = PeerAddress(host: "10.0.0.1", port: 4100)
    let otherRelay = PeerAddress(host: "10.0.0.9", port: 4100)
    let peerB = PeerAddress(host: "10.0.0.2", port: 4100)
    let peerC = PeerAddress(host: "10.0.0.3", port: 4100)

    func manager(
        role: NodeRole = .peer, _ mode: TopologyMode = .auto, fallbackMs: Milliseconds = 3_000
    ) -> PeerManager {
        var configuration = PeerManager.Configuration()
        configuration.topology = mode
        configuration.relayFallbackMs = fallbackMs
        return PeerManager(replicaID: "m", role: role, configuration: configuration)
    }

    /// Dials and identifies `address` as connection `id`; returns the directives of the hello.
    @discardableResult
    func connect(
        _ peers: inout PeerManager, _ id: ConnectionID, to address: PeerAddress?, replica: String, role: NodeRole,
        now: Milliseconds
    ) -> [PeerManager.Directive] {
        _ = peers.connected(id, dialed: address, now: now)
        return peers.identified(id, replicaID: replica, role: role, now: now)
    }

    @Test func anAutoReplicaStartsInTheMeshAndDialsEveryPeer() {
        var peers = manager()
        peers.addPeer(relay, source: .discovered, replicaID: "r", role: .relay, now: 0)
        peers.addPeer(peerB, source: .discovered, replicaID: "b", role: .peer, now: 0)
        #expect(peers.topology == .mesh)
        #expect(Set(peers.tick(now: 0)) == [.dial(relay), .dial(peerB)])
    }

    @Test func aRelayHelloTurnsAnAutoReplicaToTheHubClosingOutboundPeersAndKeepingAcceptedOnes() {
        var peers = manager()
        peers.addPeer(peerB, source: .configured, now: 0)
        peers.addPeer(relay, source: .configured, now: 0)
        _ = peers.tick(now: 0)
        connect(&peers, 1, to: peerB, replica: "b", role: .peer, now: 10)
        connect(&peers, 2, to: nil, replica: "c", role: .peer, now: 10)
        let directives = connect(&peers, 3, to: relay, replica: "r", role: .relay, now: 20)
        #expect(peers.topology == .hub)
        #expect(directives == [.close(1, reason: "hub topology: only relays are dialed")])
        #expect(peers.connections[2]?.closing == false, "c dialed us: it may still run the mesh")
    }

    @Test func inTheHubOnlyRelaysAndConfiguredAddressesOfUnknownRoleAreDialed() {
        var peers = manager(.hub)
        peers.addPeer(relay, source: .discovered, replicaID: "r", role: .relay, now: 0)
        peers.addPeer(peerB, source: .discovered, replicaID: "b", role: .peer, now: 0)
        peers.addPeer(peerC, source: .exchanged, replicaID: "c", now: 0)
        peers.addPeer(otherRelay, source: .configured, now: 0)
        #expect(Set(peers.tick(now: 0)) == [.dial(relay), .dial(otherRelay)])
        #expect(peers.nextDeadline == nil, "b and c are not due in the hub")
    }

    @Test func aConfiguredAddressThatTurnsOutToBeAPeerIsClosedAndNotRedialedInTheHub() {
        var peers = manager(.hub)
        peers.addPeer(peerB, source: .configured, now: 0)
        _ = peers.tick(now: 0)
        let directives = connect(&peers, 1, to: peerB, replica: "b", role: .peer, now: 10)
        #expect(directives == [.close(1, reason: "hub topology: only relays are dialed")])
        peers.disconnected(1, now: 20)
        #expect(peers.targets[peerB]?.role == .peer)
        #expect(peers.tick(now: 60_000).isEmpty)
    }

    @Test func losingTheLastRelayFallsBackToTheMeshAfterTheFallbackDelay() {
        var peers = manager()
        peers.addPeer(relay, source: .configured, now: 0)
        _ = peers.tick(now: 0)
        connect(&peers, 1, to: relay, replica: "r", role: .relay, now: 0)
        peers.addPeer(peerB, source: .exchanged, replicaID: "b", now: 0)
        #expect(peers.tick(now: 100).isEmpty, "b is not dialed in the hub")
        peers.disconnected(1, now: 1_000)
        #expect(peers.hubState == .relayLost(since: 1_000, fallbackAt: 4_000))
        #expect(peers.topology == .hub)
        #expect(peers.tick(now: 2_000) == [.dial(relay)], "the relay is redialed; b still waits")
        peers.dialFailed(relay, reason: "refused", now: 2_000)
        #expect(peers.nextDeadline == 4_000)
        #expect(peers.tick(now: 3_999).isEmpty)
        #expect(Set(peers.tick(now: 4_000)) == [.dial(peerB), .dial(relay)], "b, and the relay's next try")
        #expect(peers.topology == .mesh)
    }

    @Test func aRelayBackWithinTheFallbackDelayKeepsTheHub() {
        var peers = manager()
        peers.addPeer(relay, source: .configured, now: 0)
        _ = peers.tick(now: 0)
        connect(&peers, 1, to: relay, replica: "r", role: .relay, now: 0)
        peers.addPeer(peerB, source: .exchanged, replicaID: "b", now: 0)
        peers.disconnected(1, now: 1_000)
        #expect(peers.tick(now: 2_000) == [.dial(relay)])
        connect(&peers, 2, to: relay, replica: "r", role: .relay, now: 2_100)
        #expect(peers.hubState == .hub)
        peers.heard(2, now: 5_000)
        #expect(peers.tick(now: 5_000).isEmpty, "no fallback: b is not dialed")
    }

    @Test func aRelayThatReturnsAfterTheFallbackBringsTheHubBack() {
        var peers = manager()
        peers.addPeer(relay, source: .configured, now: 0)
        _ = peers.tick(now: 0)
        connect(&peers, 1, to: relay, replica: "r", role: .relay, now: 0)
        peers.addPeer(peerB, source: .exchanged, replicaID: "b", now: 0)
        peers.disconnected(1, now: 1_000)
        _ = peers.tick(now: 2_000)
        peers.dialFailed(relay, reason: "refused", now: 2_000)
        #expect(Set(peers.tick(now: 4_000)) == [.dial(peerB), .dial(relay)])
        connect(&peers, 2, to: peerB, replica: "b", role: .peer, now: 4_010)
        #expect(peers.topology == .mesh)
        let directives = connect(&peers, 3, to: relay, replica: "r", role: .relay, now: 4_200)
        #expect(peers.topology == .hub)
        #expect(directives == [.close(2, reason: "hub topology: only relays are dialed")])
    }

    @Test func losingOneOfTwoRelaysKeepsTheHub() {
        var peers = manager()
        peers.addPeer(relay, source: .configured, now: 0)
        peers.addPeer(otherRelay, source: .configured, now: 0)
        _ = peers.tick(now: 0)
        connect(&peers, 1, to: relay, replica: "r1", role: .relay, now: 0)
        connect(&peers, 2, to: otherRelay, replica: "r2", role: .relay, now: 0)
        peers.disconnected(1, now: 1_000)
        #expect(peers.hubState == .hub)
    }

    @Test func hubModeNeverFallsBack() {
        var peers = manager(.hub)
        peers.addPeer(relay, source: .configured, now: 0)
        _ = peers.tick(now: 0)
        connect(&peers, 1, to: relay, replica: "r", role: .relay, now: 0)
        peers.addPeer(peerB, source: .exchanged, replicaID: "b", now: 0)
        peers.disconnected(1, now: 1_000)
        #expect(peers.hubState == .hub)
        #expect(peers.tick(now: 60_000) == [.dial(relay)], "only the relay, however long it is gone")
    }

    @Test func meshModeDialsEveryoneAndClosesNothingForARelay() {
        var peers = manager(.mesh)
        peers.addPeer(relay, source: .discovered, replicaID: "r", role: .relay, now: 0)
        peers.addPeer(peerB, source: .discovered, replicaID: "b", role: .peer, now: 0)
        #expect(Set(peers.tick(now: 0)) == [.dial(relay), .dial(peerB)])
        connect(&peers, 1, to: peerB, replica: "b", role: .peer, now: 10)
        #expect(connect(&peers, 2, to: relay, replica: "r", role: .relay, now: 10).isEmpty)
        #expect(peers.topology == .mesh)
    }

    @Test func aRelayIsTheHubFromTheStartDialsRelaysAndAcceptsEveryone() {
        var peers = manager(role: .relay)
        #expect(peers.topology == .hub)
        peers.addPeer(otherRelay, source: .discovered, replicaID: "r2", role: .relay, now: 0)
        peers.addPeer(peerB, source: .discovered, replicaID: "b", role: .peer, now: 0)
        #expect(peers.tick(now: 0) == [.dial(otherRelay)])
        #expect(connect(&peers, 1, to: nil, replica: "c", role: .peer, now: 10).isEmpty)
        #expect(connect(&peers, 2, to: otherRelay, replica: "r2", role: .relay, now: 10).isEmpty)
        // With no relay at all it stays the hub: replicas come to it.
        peers.disconnected(2, now: 20)
        #expect(peers.hubState == .hub)
    }

    @Test func aRoleLearnedFromAHelloAppliesToEveryAddressOfThatReplica() {
        var peers = manager()
        peers.addPeer(relay, source: .configured, now: 0)
        peers.addPeer(otherRelay, source: .exchanged, replicaID: "r", now: 0)
        _ = peers.tick(now: 0)
        connect(&peers, 1, to: relay, replica: "r", role: .relay, now: 0)
        #expect(peers.targets[otherRelay]?.role == .relay)
    }
}
