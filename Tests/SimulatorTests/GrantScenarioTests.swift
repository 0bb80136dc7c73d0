import Foundation
import Replica
import Simulator
import Testing

/// The relay (granted) mode of sessions in the random workload: replicas
/// connected to a relay claim by a request, the relays answer, and a
/// partition between the relays lets each side grant on its own.
@Suite("Simulated grants")
struct GrantScenarioTests {
    /// Two relays (sim-0, sim-1) and four peers. From 1.5 s to 10.5 s a
    /// partition puts each relay with two peers, longer than the 6 s after
    /// which a node closes a silent connection: then each relay answers its
    /// side's requests alone, and the grants of one side overrule those of
    /// the other once they meet. Claims in a third of the steps, half of
    /// them aimed at an item someone claimed.
    static func scenario(seed: UInt64) -> Scenario {
        var scenario = Scenario(seed: seed, replicaCount: 6)
        scenario.relayCount = 2
        scenario.faultPhaseMs = 12_000
        scenario.initialEventsPerReplica = 1
        scenario.appendCount = 150
        scenario.claimShare = 0.35
        scenario.concurrentEditShare = 0.2
        scenario.conditions.dropProbability = 0.01
        scenario.clockSkewMs = [0, 30, -ClockSkew.minute, 0, 2 * ClockSkew.minute, -500]
        scenario.faults = [
            ScheduledFault(at: 1_500, .partition(groups: [0, 1, 0, 1, 0, 1])), ScheduledFault(at: 10_500, .heal),
        ]
        return scenario
    }

    @Test("with relays cut off from each other seeds converge, and every replica shows the same sessions and answers")
    func grantsConverge() throws {
        var totals = SimulationStatistics()
        for seed in UInt64(41)...48 {
            let scenario = GrantScenarioTests.scenario(seed: seed)
            let simulation = try Simulation(scenario: scenario)
            let report = try simulation.run()
            let statistics = report.statistics
            totals.add(statistics)
            print("grants seed \(seed): \(statistics.summary)")
            if !report.passed { Issue.record("\(report.failureMessage)") }
            #expect(statistics.claimRequests > 0, "seed \(seed): no claim went through a relay")
            #expect(statistics.grants > 0, "seed \(seed): no request was granted")

            // Read back from every replica's file, apart from the simulator's own check.
            let logs = try (0..<scenario.replicaCount).map { try simulation.log(of: $0) }
            let items = Set(try logs[0].events(after: 0, limit: 10_000).map(\.event.entityID)).sorted()
            var requests = 0
            var overruled = 0
            for item in items {
                let sessions = try logs.map { try $0.session(entityType: Item.entityType, entityID: item) }
                for (index, session) in sessions.enumerated().dropFirst() {
                    #expect(session == sessions[0], "\(item): sim-\(index) and sim-0 report other sessions")
                }
                requests += sessions[0].requests.count
                overruled += sessions[0].requests.filter { $0.grantStood == false }.count
                checkGrants(of: sessions[0], seed: seed)
            }
            #expect(requests == statistics.claimRequests, "seed \(seed): the report counts other requests")
            #expect(overruled == statistics.overruledGrants, "seed \(seed): the report counts other overruled grants")
            #expect(statistics.unansweredRequests == 0, "seed \(seed): a request stayed unanswered")
        }
        #expect(totals.refusals > 0, "no request was refused: \(totals.summary)")
        #expect(totals.overruledGrants > 0, "no grant was overruled across the partition: \(totals.summary)")
        #expect(totals.answersGiven >= totals.grants + totals.refusals + totals.expiredRequests)
    }

    /// At most one holder by grant: a grant that stood holds the item until
    /// its holder releases it (or one is forced), or a grant that names it
    /// takes it over; no optimistic claim and no grant that saw another
    /// holder ends it. Every grant goes to the request's writer, and a
    /// request that reads refused has no grant that stood.
    private func checkGrants(of session: EntitySession, seed: UInt64) {
        let item = "seed \(seed) \(session.entityID)"
        var standing: (outcome: ClaimOutcome, granted: Bool)?
        for outcome in session.claims where outcome.refusal == nil {
            let parsed = SessionEvent.parse(outcome.event.payload)
            if let previous = standing, previous.granted, outcome.previousHolder == previous.outcome.claimant,
                outcome.claimant != previous.outcome.claimant
            {
                guard case .claimGranted(_, _, let after) = parsed else {
                    Issue.record("\(item): an optimistic claim ended a grant")
                    return
                }
                #expect(after == previous.outcome.event.eventID, "\(item): a grant ended another it did not name")
            }
            if case .claimGranted = parsed {
                standing = (outcome, true)
            } else {
                standing = (outcome, false)
            }
        }
        for request in session.requests {
            guard let answer = request.answer,
                case .claimGranted(let id, let holder, _) = SessionEvent.parse(answer.payload)
            else { continue }
            #expect(id == request.event.eventID && holder == request.event.writer, "\(item): a grant to another")
            #expect(request.grantStood != nil, "\(item): a grant missing from the claims")
        }
        for request in session.requests {
            guard let answer = request.answer, case .claimRefused = SessionEvent.parse(answer.payload) else { continue }
            let stoodGrant = session.claims.contains { outcome in
                guard outcome.refusal == nil,
                    case .claimGranted(let id, _, _) = SessionEvent.parse(outcome.event.payload)
                else { return false }
                return id == request.event.eventID
            }
            // Two relays may answer one request; the report must not say refused while a grant of it holds.
            #expect(!stoodGrant, "\(item): the request reads refused, but another relay's grant of it stood")
        }
        let stoodGrants = session.requests.filter { $0.grantStood == true }.map(\.answer?.eventID)
        #expect(Set(stoodGrants).count == stoodGrants.count, "\(item): one grant answers two requests")
    }
}
