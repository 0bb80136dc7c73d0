import Foundation
import Simulator

/// `peerd-bench simulate-sites`: replicas in sites around their own relay
/// or relay pair, sites linked over slow WAN links, under writes, relay
/// deaths and site partitions (`SitesExperiment`); one Markdown row per
/// relay count, with the run's wall-clock time and memory.
struct SimulateSites {
    var sites = 10
    var replicasPerSite = 100
    /// Relays per site, one run each.
    var relayCounts = [1, 2]
    var events = 1_000
    var relayDeaths = 3
    var partitions = 2
    var seed: UInt64 = 1

    func run() throws {
        var plan = SitesExperiment.Plan()
        plan.sites = sites
        plan.replicasPerSite = replicasPerSite
        plan.events = events
        plan.relayDeaths = min(relayDeaths, sites)
        plan.sitePartitions = min(partitions, sites)
        plan.seed = seed
        let layout = "\(plan.sites) sites × \(plan.replicasPerSite) replicas"
        print("## Simulated sites: \(layout)")
        print("")
        print(
            "- each site's replicas reach its relay(s) over a LAN of 1–5 ms; every relay dials every other "
                + "over WAN links of \(plan.wanLatencyMs.lowerBound)–\(plan.wanLatencyMs.upperBound) ms"
                + (plan.wanBytesPerSecond.map { " and \(Double($0) * 8 / 1_000_000) Mbit/s each way" } ?? ""))
        print(
            "- the hub forms for \(plan.warmUpMs / 1_000) s; then \(plan.events) write steps at random replicas "
                + "over \(plan.writingMs / 1_000) s, \(plan.relayDeaths) relay deaths (distinct sites, down "
                + "\(plan.relayDowntimeMs.lowerBound / 1_000)–\(plan.relayDowntimeMs.upperBound / 1_000) s) and "
                + "\(plan.sitePartitions) site partitions, one at a time, the last healing as the writes end; seed "
                + "\(plan.seed)")
        print(
            "- converged: every node holds every event with one state hash, counted from the last heal; bytes: "
                + "sealed frames from the first write until every peer reported that state, per event, and per "
                + "event and link used; receptions: events in the batches nodes received (duplicates count), "
                + "per event and node that did not write it")
        print("")
        print(
            "| relays per site | nodes | events | converged after last heal | LAN bytes / event | LAN links "
                + "| LAN bytes / event / link | WAN bytes / event | WAN links | WAN bytes / event / link "
                + "| receptions per event per node | per stored event | relay crashes | partitions "
                + "| run time | peak RSS | database files |")
        print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        var failed = false
        for relays in relayCounts {
            var variant = plan
            variant.relaysPerSite = relays
            ProcessMemory.resetPeak()
            let start = Date()
            FileHandle.standardError.write(Data("simulate-sites: \(relays) relay(s) per site…\n".utf8))
            let result = try SitesExperiment.run(variant)
            let seconds = Date().timeIntervalSince(start)
            let converged = result.convergedAfterLastHealMs.map { "\($0) ms" } ?? "never"
            print(
                "| \(relays) | \(result.nodes) | \(result.events) | \(converged) "
                    + "| \(format(result.lan.bytesPerEvent, 0)) | \(result.lan.links) "
                    + "| \(format(result.lan.bytesPerEventPerLink, 2)) | \(format(result.wan.bytesPerEvent, 0)) "
                    + "| \(result.wan.links) | \(format(result.wan.bytesPerEventPerLink, 2)) "
                    + "| \(format(result.receptionsPerEventPerNode, 3)) | \(format(result.receptionsPerStoredEvent, 3)) "
                    + "| \(result.relayCrashes) | \(result.partitions) | \(format(seconds, 1)) s "
                    + "| \(format(ProcessMemory.peakMiB, 0)) MiB | \(format(Double(result.databaseBytes) / 1_048_576, 0)) MiB |"
            )
            for failure in result.failures {
                failed = true
                FileHandle.standardError.write(Data("\(relays) relay(s) per site: \(failure)\n".utf8))
            }
        }
        if failed { exit(1) }
    }

    private func format(_ value: Double, _ decimals: Int) -> String {
        String(format: "%.\(decimals)f", value)
    }
}
