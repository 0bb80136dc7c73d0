import Foundation
import Replica
import Simulator
import Testing

/// Simulations with a declared domain (docs/domains.md): `ticket`, Item's
/// twin, declared by one replica and written by all, under partitions and
/// crashes, and declared again mid-run with another fold.
@Suite("Simulations with a declared domain")
struct DeclaredDomainScenarioTests {
    static func scenario(seed: UInt64, redeclareAtMs: Int64?) -> Scenario {
        var scenario = Scenario(seed: seed, replicaCount: 5)
        scenario.faultPhaseMs = 8_000
        scenario.appendCount = 60
        scenario.declaredShare = 0.5
        scenario.redeclareAtMs = redeclareAtMs
        scenario.faults = [
            ScheduledFault(at: 500, .partition(groups: [0, 0, 1, 1, 1])),
            ScheduledFault(at: 1_500, .crash(replica: 4)), ScheduledFault(at: 5_000, .restart(replica: 4)),
            ScheduledFault(at: 6_000, .heal),
        ]
        return scenario
    }

    @Test("every replica converges to one state hash, tickets folded", arguments: [UInt64(31), 32, 33])
    func declaredDomainConverges(seed: UInt64) throws {
        let simulation = try Simulation(scenario: Self.scenario(seed: seed, redeclareAtMs: nil))
        let report = try simulation.run()
        if !report.passed { Issue.record("\(report.failureMessage)") }
        let log = try simulation.log(of: 0)
        #expect(try log.declaredDomains().map(\.version) == [1])
        #expect(try !log.states(entityType: "ticket").isEmpty)
    }

    @Test("a declaration changed mid-run refolds every ticket alike", arguments: [UInt64(41), 42, 43])
    func redeclaredMidRunConverges(seed: UInt64) throws {
        let simulation = try Simulation(scenario: Self.scenario(seed: seed, redeclareAtMs: 3_000))
        let report = try simulation.run()
        if !report.passed { Issue.record("\(report.failureMessage)") }
        for index in 0..<5 {
            let log = try simulation.log(of: index)
            #expect(try log.declaredDomains().map(\.version) == [2], "replica \(index)")
            #expect(try log.poisonEventCount() == 0, "replica \(index)")
        }
        // Under version 2 a live ticket's quantity is its Created quantity plus every change.
        let log = try simulation.log(of: 0)
        let states = try log.states(entityType: "ticket").map { try JSONValue.parse($0.json) }
        #expect(!states.isEmpty)
        for state in states where state["deleted"] == .bool(false) {
            guard case .string(let id)? = state["id"] else { continue }
            let quantities = try log.events(entityType: "ticket", entityID: id).compactMap { stored -> Int64? in
                guard case .int(let quantity)? = try JSONValue.parse(stored.event.payload)["quantity"] else {
                    return nil
                }
                return quantity
            }
            #expect(state["quantity"] == .int(quantities.reduce(0, +)), "ticket \(id)")
        }
    }
}
