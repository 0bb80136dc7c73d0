import Foundation
import Gossip
import Replica
import SyncProtocol

/// What one relay's grantor knows, as the daemon's `ClaimGrantor` keeps it
/// in memory: lost in a crash, so a restarted relay scans its log again.
struct RelayGrantor {
    /// The relay's incarnation this state belongs to.
    var incarnation: Int
    /// The local offset up to which the relay's log was scanned for requests.
    var scannedOffset: Int64 = 0
    /// Requests seen and not settled yet, in arrival order.
    var waiting: [StoredEvent] = []
}

/// The relay (granted) mode of sessions (docs/sessions.md), as the daemon
/// runs it: a replica connected to a relay (or a relay itself) claims by a
/// `ClaimRequested`, and of the relays connected to each other the one with
/// the lowest replica id answers every request it stores, in arrival order.
extension Simulation {
    /// How long a request waits for an answer before the answering relay
    /// refuses it as expired (the daemon's `ClaimGrantor.requestLifetimeMs`).
    static let claimRequestLifetimeMs: Int64 = 30_000

    /// True when claims go through relays: the scenario has relays and claims.
    var grantsClaims: Bool { scenario.relayCount > 0 && scenario.claimShare > 0 }

    /// The relays the replica's node has an identified session with now, as
    /// the daemon's `connectedRelays()` reads its peer table. A session lost
    /// in a partition counts until the node notices that it went silent.
    func connectedRelays(of replica: SimulatedReplica) -> [String] {
        guard let node = replica.node else { return [] }
        return node.sessions.keys.sorted().compactMap { id in
            guard let peer = node.sessions[id]!.peer, peer.role == .relay else { return nil }
            return peer.replicaID
        }
    }

    /// True when a claim on the replica needs a relay's grant: it is a relay,
    /// or it is connected to one (the daemon's `ClaimDesk.relayReachable`).
    func reachesRelay(_ replica: SimulatedReplica) -> Bool {
        grantsClaims && (role(of: replica.index) == .relay || !connectedRelays(of: replica).isEmpty)
    }

    /// Every running relay answers what it stores, as `ClaimGrantor` does
    /// after each commit and on its timer: called after every occurrence,
    /// relays in index order, so that a seed replays exactly. The answers
    /// are acknowledged appends like any other and sync as any other.
    func answerClaimRequests() throws {
        guard grantsClaims else { return }
        for index in 0..<min(scenario.relayCount, replicas.count) {
            let relay = replicas[index]
            guard let log = relay.log, relay.node != nil else { continue }
            var grantor =
                grantors[index].flatMap { $0.incarnation == relay.incarnation ? $0 : nil }
                ?? RelayGrantor(incarnation: relay.incarnation)
            // The newest offset first: a request stored after it is found next time.
            let newest = try log.lastOffset()
            while grantor.scannedOffset < newest {
                let found = try log.claimRequests(after: grantor.scannedOffset, limit: 500)
                grantor.waiting += found
                grantor.scannedOffset = found.count == 500 ? found[found.count - 1].offset : newest
            }
            if !grantor.waiting.isEmpty { try answer(&grantor, on: relay) }
            grantors[index] = grantor
        }
    }

    /// The waiting requests: answered in arrival order by the leader; a
    /// follower only lets go of what expired (the leader refuses it).
    private func answer(_ grantor: inout RelayGrantor, on relay: SimulatedReplica) throws {
        let leader = (connectedRelays(of: relay) + [relay.replicaID]).min() == relay.replicaID
        let nowMs = clock.wallClock(skewMs: relay.skewMs)()
        var settled: Set<UUID> = []
        for request in grantor.waiting {
            let expired = nowMs - request.arrivalTimeMs > Self.claimRequestLifetimeMs
            guard leader || expired else { continue }
            settled.insert(request.event.eventID)
            guard leader else { continue }
            acknowledge(on: relay) { log in
                // Nil: answered already, by this relay or another one.
                guard let answer = try log.answerClaimRequest(request.event, expired: expired) else { return nil }
                statistics.answersGiven += 1
                return answer
            }
        }
        grantor.waiting.removeAll { settled.contains($0.event.eventID) }
    }
}
