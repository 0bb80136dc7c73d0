import Gossip
import SyncProtocol

/// Replicas in several sites, each site around its own relay or relay
/// pair, the sites' relays linked over slow WAN links (`SiteLayout`),
/// under writes, relay deaths and site partitions.
///
/// The hub forms for `warmUpMs` on a calm network. Then, for `writingMs`,
/// the workload writes `events` steps at random replicas and times, while
/// relays crash and restart from their files (each in another site; with a
/// pair, the other relay of the site carries on) and sites are cut off
/// from the others one at a time (their WAN links drop everything, dials
/// too) and healed; the last partition heals when the writes end. From
/// that last heal the clock runs until every node holds every event with
/// one state hash.
///
/// ```swift
/// var plan = SitesExperiment.Plan()
/// plan.relaysPerSite = 2
/// let result = try SitesExperiment.run(plan)
/// print(result.convergedAfterLastHealMs, result.wan.bytesPerEventPerLink, result.receptionsPerEventPerNode)
/// ```
public enum SitesExperiment {
    /// What one run does.
    public struct Plan: Sendable, Hashable {
        public var sites = 10
        public var replicasPerSite = 100
        /// 1: one relay per site; 2: a relay pair.
        public var relaysPerSite = 1
        /// Workload steps (an edit on several replicas at once is one step of several events).
        public var events = 1_000
        /// Relays that crash and restart, each in another site.
        public var relayDeaths = 3
        /// Sites cut off from the others, one after another.
        public var sitePartitions = 2
        public var seed: UInt64 = 1
        public var warmUpMs: Milliseconds = 10_000
        public var writingMs: Milliseconds = 60_000
        /// How long a dead relay stays down, and a site cut off.
        public var relayDowntimeMs: ClosedRange<Milliseconds> = 5_000...15_000
        public var partitionMs: ClosedRange<Milliseconds> = 5_000...15_000
        public var wanLatencyMs: ClosedRange<Milliseconds> = 50...200
        public var wanBytesPerSecond: Int? = 1_250_000

        public init() {}

        var layout: SiteLayout {
            var layout = SiteLayout(sites: sites, replicasPerSite: replicasPerSite, relaysPerSite: relaysPerSite)
            layout.wanLatencyMs = wanLatencyMs
            layout.wanBytesPerSecond = wanBytesPerSecond
            return layout
        }
    }

    /// The outcome of one run.
    public struct Result: Sendable {
        public var plan: Plan
        /// Relays and replicas.
        public var nodes: Int
        /// Events appended (acknowledged), every one of which every node must hold.
        public var events: Int
        /// When the last partition healed (or the last relay restarted), virtual ms.
        public var lastHealAtMs: Milliseconds
        /// From then until every node held every event with one state hash.
        public var convergedAfterLastHealMs: Milliseconds?
        /// Traffic from the first write until every peer reported the common state.
        public var lan: ClassFigures
        public var wan: ClassFigures
        /// Events received in batches from peers, duplicates included, per
        /// event and per node that did not write it: 1 when each event
        /// reached each node once.
        public var receptionsPerEventPerNode: Double
        /// The same per event a node stored from a peer.
        public var receptionsPerStoredEvent: Double
        public var relayCrashes: Int
        public var partitions: Int
        /// Virtual time of the whole run.
        public var virtualMs: Milliseconds
        /// Bytes of every node's database files at the end (WALs included).
        public var databaseBytes: Int
        /// What the convergence checks found wrong; empty when all held all.
        public var failures: [String]
    }

    /// The traffic of one class of links (within a site, or between sites).
    public struct ClassFigures: Sendable, Hashable {
        public var bytes: Int
        public var messages: Int
        /// Node pairs whose link carried anything.
        public var links: Int
        public var bytesPerEvent: Double
        public var bytesPerEventPerLink: Double
    }

    /// The scenario of a plan: the layout, the workload's window and the faults.
    public static func scenario(_ plan: Plan) -> Scenario {
        let layout = plan.layout
        var scenario = Scenario(seed: plan.seed, sites: layout)
        let writesEnd = plan.warmUpMs + plan.writingMs
        scenario.conditions = .calm
        scenario.countsBytes = true
        scenario.appendCount = plan.events
        scenario.appendsFromMs = plan.warmUpMs
        // The measured window starts with the writes (no event is appended here).
        scenario.initialEventsAtMs = plan.warmUpMs
        // A relay accepts every replica of its site and every other relay; every relay dials every other.
        scenario.peers.maxConnections = max(64, plan.replicasPerSite + layout.relayCount + 8)
        scenario.peers.maxOutbound = max(16, layout.relayCount)
        scenario.convergenceCheckEveryMs = 100
        var random = SimulationRandom(seed: plan.seed ^ 0x5173_5173)
        scenario.faults = faults(plan, layout: layout, writesEnd: writesEnd, using: &random)
        scenario.faultPhaseMs = max(writesEnd, lastHeal(of: scenario.faults) ?? 0)
        scenario.settleLimitMs = 600_000
        return scenario
    }

    /// Relay deaths in distinct sites, anywhere in the writing window but
    /// back before it ends; then the partitions, one after another, the
    /// last one healing as the writes end.
    static func faults(
        _ plan: Plan, layout: SiteLayout, writesEnd: Milliseconds, using random: inout SimulationRandom
    ) -> [ScheduledFault] {
        var plannedFaults: [ScheduledFault] = []
        var sites = Array(0..<plan.sites)
        sites.shuffle(using: &random)
        for site in sites.prefix(plan.relayDeaths) {
            let relay = random.element(of: Array(layout.relays(of: site)))
            let downtime = random.int(in: plan.relayDowntimeMs)
            let latest = max(plan.warmUpMs + 1_000, writesEnd - downtime - 2_000)
            let crash = random.int(in: (plan.warmUpMs + 1_000)...latest)
            plannedFaults.append(ScheduledFault(at: crash, .crash(replica: relay)))
            plannedFaults.append(ScheduledFault(at: crash + downtime, .restart(replica: relay)))
        }
        sites.shuffle(using: &random)
        let cut = sites.prefix(plan.sitePartitions)
        // Each partition in its own slot of the window, the last one ending as the writes end.
        let slot = plan.writingMs / Milliseconds(max(1, cut.count))
        for (k, site) in cut.enumerated() {
            let end = plan.warmUpMs + slot * Milliseconds(k + 1)
            let length = min(random.int(in: plan.partitionMs), slot - 500)
            plannedFaults.append(ScheduledFault(at: end - length, .partition(groups: layout.isolating(site))))
            plannedFaults.append(ScheduledFault(at: end, .heal))
        }
        return plannedFaults.sorted { $0.at < $1.at }
    }

    /// The time of the last heal or restart in a plan.
    static func lastHeal(of faults: [ScheduledFault]) -> Milliseconds? {
        faults.filter {
            switch $0.action {
            case .heal, .restart: true
            case .partition, .crash, .cutLink: false
            }
        }.map(\.at).max()
    }

    /// Runs the plan to convergence and counts its traffic.
    public static func run(_ plan: Plan) throws -> Result {
        let scenario = scenario(plan)
        let simulation = try Simulation(scenario: scenario)
        let report = try simulation.run()
        let statistics = report.statistics
        let events = Int(simulation.ledger.expected.eventCount)
        let nodes = scenario.replicaCount
        let lastHealAt = lastHeal(of: scenario.faults) ?? scenario.faultPhaseMs
        let received = statistics.eventsReceived - statistics.eventsReceivedBeforeInitialEvents
        return Result(
            plan: plan, nodes: nodes, events: events, lastHealAtMs: lastHealAt,
            convergedAfterLastHealMs: report.convergedAtMs.map { $0 - lastHealAt },
            lan: figures(statistics.network.lan, before: statistics.lanBeforeInitialEvents, events: events),
            wan: figures(statistics.network.wan, before: statistics.wanBeforeInitialEvents, events: events),
            receptionsPerEventPerNode: Double(received) / Double(max(1, events * (nodes - 1))),
            receptionsPerStoredEvent: statistics.receptionsPerStoredEvent, relayCrashes: statistics.crashes,
            partitions: statistics.partitions, virtualMs: simulation.now,
            databaseBytes: simulation.directory.fileBytes, failures: report.failures)
    }

    private static func figures(_ traffic: LinkTraffic, before: LinkTraffic, events: Int) -> ClassFigures {
        let bytes = traffic.bytes - before.bytes
        let perEvent = Double(bytes) / Double(max(1, events))
        return ClassFigures(
            bytes: bytes, messages: traffic.messages - before.messages, links: traffic.linksUsed,
            bytesPerEvent: perEvent, bytesPerEventPerLink: perEvent / Double(max(1, traffic.linksUsed)))
    }
}
