import Simulator
import SyncProtocol
import Testing

/// Sites around their own relay or relay pair, linked over slow WAN links
/// (`SitesExperiment`), on a scale that runs in seconds: 3 sites of 20
/// replicas, a relay death and a site partition.
@Suite("Simulated sites")
struct SitesTests {
    static func plan(relaysPerSite: Int) -> SitesExperiment.Plan {
        var plan = SitesExperiment.Plan()
        plan.sites = 3
        plan.replicasPerSite = 20
        plan.relaysPerSite = relaysPerSite
        plan.events = 30
        plan.relayDeaths = 1
        plan.sitePartitions = 1
        plan.warmUpMs = 3_000
        plan.writingMs = 12_000
        plan.relayDowntimeMs = 3_000...5_000
        plan.partitionMs = 3_000...5_000
        plan.seed = 4
        return plan
    }

    @Test(
        "sites converge after a relay death and a site partition, each event crossing the network about once per node",
        arguments: [1, 2])
    func sitesConvergeAfterFaults(relaysPerSite: Int) throws {
        let result = try SitesExperiment.run(Self.plan(relaysPerSite: relaysPerSite))
        #expect(result.failures.isEmpty, "\(result.failures)")
        #expect(result.nodes == 3 * (20 + relaysPerSite))
        #expect(result.relayCrashes == 1 && result.partitions == 1)
        let converged = try #require(result.convergedAfterLastHealMs)
        #expect(converged < 10_000, "converged \(converged) ms after the last heal")
        // Every replica talks to its site's relays over the LAN; the relays to each other over the WAN.
        #expect(result.lan.links >= 60 * relaysPerSite, "LAN links \(result.lan.links)")
        #expect(result.wan.links >= 3, "WAN links \(result.wan.links)")
        #expect(result.lan.bytesPerEvent > 0 && result.wan.bytesPerEvent > 0)
        // An event reaches each node at least once. Nearly every origin writes one event, which link
        // pruning cannot spare (its first events cross every link): a replica gets it from each of
        // its relays, and from its mesh peers while its site has no relay. A flood would be near 16.
        #expect(
            result.receptionsPerEventPerNode >= 1 && result.receptionsPerEventPerNode < Double(relaysPerSite + 2),
            "receptions \(result.receptionsPerEventPerNode)")
    }

    @Test("the fault plan puts relay deaths in distinct sites and ends the last partition as the writes end")
    func faultPlan() throws {
        var plan = Self.plan(relaysPerSite: 2)
        plan.relayDeaths = 3
        plan.sitePartitions = 2
        let scenario = SitesExperiment.scenario(plan)
        let crashed = scenario.faults.compactMap { fault -> Int? in
            if case .crash(let relay) = fault.action { relay } else { nil }
        }
        #expect(crashed.count == 3)
        #expect(Set(crashed.map { $0 / 2 }).count == 3, "crashed relays \(crashed)")
        #expect(crashed.allSatisfy { $0 < 6 }, "only relays crash: \(crashed)")
        let heals = scenario.faults.filter { $0.action == .heal }.map(\.at)
        #expect(heals.max() == plan.warmUpMs + plan.writingMs)
        #expect(scenario.faultPhaseMs == plan.warmUpMs + plan.writingMs)
    }
}
