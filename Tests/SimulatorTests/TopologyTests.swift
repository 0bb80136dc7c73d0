import Simulator
import SyncProtocol
import Testing

/// The hub against the mesh on the same simulated replicas
/// (`TopologyExperiment`), and a relay that crashes and comes back.
@Suite("Simulated topology")
struct TopologyTests {
    @Test(
        "the hub keeps one connection per replica and sends fewer bytes per live event than the mesh",
        arguments: [5, 20])
    func hubCostsLessThanTheMesh(replicas: Int) throws {
        let mesh = try TopologyExperiment.run(replicas: replicas, topology: .mesh, seed: 3)
        let hub = try TopologyExperiment.run(replicas: replicas, topology: .hub, seed: 3)
        #expect(mesh.failures.isEmpty, "\(mesh.failures)")
        #expect(hub.failures.isEmpty, "\(hub.failures)")
        #expect(mesh.connections == replicas * (replicas - 1) / 2)
        #expect(hub.connections == replicas)
        #expect(
            hub.bytesPerLiveEvent < mesh.bytesPerLiveEvent,
            "hub \(hub.bytesPerLiveEvent), mesh \(mesh.bytesPerLiveEvent)")
    }

    @Test("replicas converge when their relay crashes mid-run, through the mesh, and again once it restarts")
    func relayCrashAndRestart() throws {
        var scenario = Scenario(seed: 5, replicaCount: 6)
        scenario.relayCount = 1
        scenario.faultPhaseMs = 12_000
        scenario.appendCount = 30
        scenario.faults = [
            ScheduledFault(at: 4_000, .crash(replica: 0)), ScheduledFault(at: 10_000, .restart(replica: 0)),
        ]
        let report = try Simulation(scenario: scenario).run()
        #expect(report.passed, "\(report.failureMessage)")
        #expect(report.statistics.crashes == 1 && report.statistics.restarts == 1)
    }
}
