import Foundation
import Gossip
import Replica
import SyncProtocol

/// The relay (granted) mode of sessions (docs/sessions.md), as the daemon
/// runs it: a replica connected to a relay (or a relay itself) claims by a
/// `ClaimRequested`, and every relay runs the `ClaimGrants` core that the
/// daemon's `ClaimGrantor` runs, against its own log and clock.
extension Simulation {
    /// True when claims go through relays: the scenario has relays and claims.
    var grantsClaims: Bool { scenario.relayCount > 0 && scenario.claimShare > 0 }

    /// True when a claim on the replica needs a relay's grant (the daemon's `ClaimDesk.relayReachable`).
    func reachesRelay(_ replica: SimulatedReplica) -> Bool {
        guard grantsClaims, let node = replica.node else { return false }
        return ClaimGrants.needsGrant(isRelay: role(of: replica.index) == .relay, connectedRelays: node.connectedRelays)
    }

    /// Every running relay answers what it stores, as `ClaimGrantor` does
    /// after each commit and on its timer: called after every occurrence,
    /// relays in index order, so that a seed replays exactly. The answers
    /// are acknowledged appends like any other and sync as any other. A
    /// restarted relay (a new incarnation) starts from an empty core and
    /// scans its log again, as a restarted daemon does.
    func answerClaimRequests() throws {
        guard grantsClaims else { return }
        for index in 0..<min(scenario.relayCount, replicas.count) {
            let relay = replicas[index]
            guard let log = relay.log, let node = relay.node else { continue }
            var grants =
                grantors[index].flatMap { $0.incarnation == relay.incarnation ? $0.grants : nil } ?? ClaimGrants()
            // The newest offset first: a request stored after it is found next time.
            let newest = try log.lastOffset()
            while try grants.scanned(
                log.claimRequests(after: grants.scannedOffset, limit: ClaimGrants.scanLimit), newest: newest)
            {}
            let leader = ClaimGrants.isLeader(relay.replicaID, connectedRelays: node.connectedRelays)
            let nowMs = clock.wallClock(skewMs: relay.skewMs)()
            for case .answer(let request, let expired) in grants.decide(leader: leader, nowMs: nowMs) {
                acknowledge(on: relay) { log in
                    // Nil: answered already, by this relay or another one.
                    guard let answer = try log.answerClaimRequest(request.event, expired: expired) else { return nil }
                    statistics.answersGiven += 1
                    return answer
                }
                grants.answered(request)
            }
            grantors[index] = (incarnation: relay.incarnation, grants: grants)
        }
    }
}
