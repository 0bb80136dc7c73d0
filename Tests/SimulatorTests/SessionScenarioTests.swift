import Foundation
import Replica
import Simulator
import Testing

/// Single-writer sessions in the random workload: claims, takeovers and
/// releases amid partitions, lost messages and edits by replicas not told yet.
@Suite("Simulated sessions")
struct SessionScenarioTests {
    /// Five replicas, a partition for half the fault phase, a replica down
    /// for a while, and claims in a third of the steps: writers on the other
    /// side of the partition (and ones that edit in the instant of a claim)
    /// write into a held item.
    static func scenario(seed: UInt64) -> Scenario {
        var scenario = Scenario(seed: seed, replicaCount: 5)
        scenario.faultPhaseMs = 6_000
        scenario.initialEventsPerReplica = 1
        scenario.appendCount = 60
        scenario.claimShare = 0.3
        scenario.concurrentEditShare = 0.2
        scenario.conditions.dropProbability = 0.02
        scenario.clockSkewMs = [0, 40, -2 * ClockSkew.minute, 0, 3 * ClockSkew.minute]
        scenario.faults = [
            ScheduledFault(at: 1_500, .partition(groups: [0, 0, 1, 1, 1])), ScheduledFault(at: 4_500, .heal),
            ScheduledFault(at: 2_000, .crash(replica: 4)), ScheduledFault(at: 5_000, .restart(replica: 4)),
        ]
        return scenario
    }

    @Test("with claims in the workload seeds converge, and every replica shows the same holders and dropped tails")
    func claimsConverge() throws {
        var totals = SimulationStatistics()
        for seed in UInt64(31)...42 {
            let scenario = SessionScenarioTests.scenario(seed: seed)
            let simulation = try Simulation(scenario: scenario)
            let report = try simulation.run()
            let statistics = report.statistics
            totals.add(statistics)
            print("sessions seed \(seed): \(statistics.summary)")
            if !report.passed { Issue.record("\(report.failureMessage)") }
            #expect(statistics.claims > 0, "seed \(seed): no claim was made")

            // Read back from every replica's file, apart from the simulator's own check.
            let logs = try (0..<scenario.replicaCount).map { try simulation.log(of: $0) }
            let items = Set(try logs[0].events(after: 0, limit: 10_000).map(\.event.entityID)).sorted()
            var dropped = 0
            for item in items {
                let sessions = try logs.map { try $0.session(entityType: Item.entityType, entityID: item) }
                dropped += sessions[0].dropped.count
                for (index, session) in sessions.enumerated().dropFirst() {
                    #expect(
                        session.state == sessions[0].state, "\(item): sim-\(index) and sim-0 disagree on the holder")
                    #expect(
                        session.dropped.map(\.event.eventID) == sessions[0].dropped.map(\.event.eventID),
                        "\(item): sim-\(index) and sim-0 drop different events")
                    #expect(session.dropped.map(\.holder) == sessions[0].dropped.map(\.holder))
                }
            }
            #expect(dropped == statistics.droppedEvents, "seed \(seed): the report counts another tail")
        }
        // The tails compared above are not all empty: writers did write into held items.
        #expect(totals.droppedEvents > 0, "no event fell into a dropped tail: \(totals.summary)")
        #expect(totals.takeovers > 0, "no claim took over: \(totals.summary)")
        #expect(totals.releases > 0 && totals.forcedReleases > 0, "\(totals.summary)")
        #expect(totals.refusedBySessions > 0, "no append was refused for a holder")
    }
}
