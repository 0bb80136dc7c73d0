import Gossip
import SyncProtocol

/// Everything one simulated run does, derived from a seed or written out
/// by a test: replicas, clock skews, network faults, crashes and
/// partitions during the fault phase, the workload, and the sync settings.
///
/// ```swift
/// let report = try Simulation(scenario: .random(seed: 7)).run()
/// #expect(report.passed, "\(report.failureMessage)")
/// ```
public struct Scenario: Sendable {
    /// Seeds every random choice of the run; the same seed replays the same run.
    public var seed: UInt64
    public var replicaCount: Int
    /// The first `relayCount` replicas run as relays (`NodeRole.relay`);
    /// every replica knows every other's role, as mDNS TXT tells it.
    public var relayCount = 0
    /// Faults and local appends happen in `0..<faultPhaseMs`; then the
    /// network heals, crashed replicas restart, and the faults stop.
    public var faultPhaseMs: Milliseconds = 20_000
    /// How long after the fault phase the replicas may take to converge.
    public var settleLimitMs: Milliseconds = 300_000
    /// The network during the fault phase (it is `calm` after).
    public var conditions = NetworkConditions()
    public var faults: [ScheduledFault] = []
    /// Per replica: how far its wall clock is off true time.
    public var clockSkewMs: [Milliseconds]
    /// Local appends at random replicas and times during the fault phase.
    public var appendCount = 0
    /// Of those, the share that edit one item on several replicas at once.
    public var concurrentEditShare = 0.1
    /// Of those, the share that claim an item (some taking it over from
    /// another replica) or release one, as single-writer sessions do; 0
    /// leaves the workload without sessions.
    public var claimShare = 0.0
    /// Of the items created, the share in a second scope (so a replica writes two feeds).
    public var secondScopeShare = 0.0
    /// Of the append steps, the share that write a declared `ticket`
    /// (docs/domains.md: Item's twin, declared by a replica at the first
    /// such step); 0: no declared domain.
    public var declaredShare = 0.0
    /// When set, a replica declares `ticket` version 2 at this time (its
    /// `QuantityChanged` adds rather than sets), refolding every ticket.
    public var redeclareAtMs: Milliseconds?
    /// Events each replica appends (an item it creates) at `initialEventsAtMs`,
    /// before any other append.
    public var initialEventsPerReplica = 0
    public var initialEventsAtMs: Milliseconds = 0
    /// Later times at which every replica appends `initialEventsPerReplica`
    /// events again (after `initialEventsAtMs`).
    public var laterEventWavesAtMs: [Milliseconds] = []
    /// When set, only the first this many replicas (after the relays)
    /// append the initial events and the later waves.
    public var eventWriters: Int?
    public var session = SyncSession.Configuration()
    public var peers = PeerManager.Configuration()
    public var antiEntropyIntervalMs: Milliseconds = 1_000
    /// When set, storage answers each node's work after a random delay in
    /// this range (virtual ms), as a real storage executor answers later:
    /// messages then arrive while a store is still out.
    public var storageDelayMs: ClosedRange<Milliseconds>?
    /// Records over how many transfers each event reached each replica
    /// (`SimulationReport.hops`); costs memory, so off unless asked for.
    public var tracksHops = false
    /// How often, after the fault phase, the simulator checks for convergence.
    public var convergenceCheckEveryMs: Milliseconds = 250
    /// How long after converging every session's peer may take to report
    /// the common state hash in a `state` message.
    public var stateReportLimitMs: Milliseconds = 10_000
    /// Counts the bytes of every message as the wire encodes it
    /// (`NetworkStatistics.bytesSent`); costs time, so off unless asked for.
    public var countsBytes = false
    /// Prints every node log line and every fault as it happens.
    public var trace = false
    /// Every replica has an identity key (seeded from its index), signs its
    /// feeds and verifies every event it takes, as `peerd` does
    /// (docs/protocol.md "Signed feeds"); off, the protocol runs unsigned.
    public var signedFeeds = true
    /// Checkpoints made mid-run, a retired device, a fresh replica that
    /// joins late and late edits (`Scenario.checkpoints(seed:)`); nil: a
    /// run without checkpoints.
    public var checkpoints: CheckpointPlan?
    /// Replicas grouped in sites around their own relays, linked over slow
    /// WAN links (`SiteLayout`); nil: one LAN where every replica knows
    /// every other.
    public var sites: SiteLayout?
    /// Local appends (`appendCount`) fall in `appendsFromMs..<faultPhaseMs`.
    public var appendsFromMs: Milliseconds = 0

    /// A calm scenario: no faults, no skew, no workload.
    public init(seed: UInt64, replicaCount: Int) {
        precondition(replicaCount >= 1, "a scenario needs a replica")
        self.seed = seed
        self.replicaCount = replicaCount
        clockSkewMs = Array(repeating: 0, count: replicaCount)
    }

    /// A calm scenario of replicas in sites (`SiteLayout`): its relays
    /// first, then its replicas, site by site.
    public init(seed: UInt64, sites: SiteLayout) {
        self.init(seed: seed, replicaCount: sites.nodeCount)
        self.sites = sites
        relayCount = sites.relayCount
    }

    /// The scenario of one seed of the sweep: 3–20 replicas, random fault
    /// rates, partitions, crashes, skews, workload (claims and releases in
    /// half the seeds) and sync settings.
    public static func random(seed: UInt64, replicas: ClosedRange<Int> = 3...20) -> Scenario {
        var random = SimulationRandom(seed: seed ^ 0x5EED_0F_5EED)
        var scenario = Scenario(seed: seed, replicaCount: random.int(in: replicas))
        let count = scenario.replicaCount
        scenario.faultPhaseMs = random.int(in: 3_000...6_000)
        scenario.conditions = .random(using: &random)
        scenario.faults = ScheduledFault.randomPlan(
            replicaCount: count, phaseMs: scenario.faultPhaseMs, using: &random)
        scenario.clockSkewMs = ClockSkew.random(replicaCount: count, using: &random)
        scenario.appendCount = random.int(in: 3...10)
        scenario.secondScopeShare = random.chance(0.3) ? 0.2 : 0
        scenario.concurrentEditShare = random.double(in: 0.05...0.35)
        scenario.session.batchEvents = random.element(of: [1, 3, 10, 2_000])
        scenario.session.window = random.int(in: 1...4)
        scenario.session.livePush = random.chance(0.5)
        scenario.peers.maxOutbound = random.chance(0.1) ? 16 : random.int(in: 2...4)
        scenario.peers.rotateEveryMs = random.element(of: [nil, 5_000, 60_000])
        scenario.storageDelayMs = random.element(of: [nil, 0...5, 1...40])
        // Drawn last, so that every choice above stays what the seed gave before sessions.
        scenario.claimShare = random.chance(0.5) ? 0.2 : 0
        return scenario
    }

    /// The command that replays this seed alone.
    public var replayCommand: String {
        guard checkpoints == nil else { return CheckpointPlan.replayCommand(seed: seed) }
        return "PEERSYNC_SIM_SEED=\(seed) swift test --filter SimulatorTests"
    }

    /// One line that says what the run does.
    public var summary: String {
        let skews = clockSkewMs.map { skewText($0) }.joined(separator: ",")
        return "seed \(seed): \(replicaCount) replicas, \(faultPhaseMs) ms of faults "
            + "(drop \(percent(conditions.dropProbability)), dup \(percent(conditions.duplicateProbability)), "
            + "delay \(percent(conditions.delayProbability)), \(faults.count) planned faults), "
            + "\(appendCount) appends\(claimShare > 0 ? " (claims \(percent(claimShare)))" : ""), batch \(session.batchEvents)x\(session.window), "
            + "live push \(session.livePush), max outbound \(peers.maxOutbound), "
            + "storage delay \(storageDelayMs.map { "\($0.lowerBound)-\($0.upperBound) ms" } ?? "none"), skews [\(skews)]"
            + (checkpoints.map { "; \($0.summary)" } ?? "")
    }

    private func percent(_ probability: Double) -> String {
        "\(Double(Int(probability * 1_000)) / 10)%"
    }

    private func skewText(_ skew: Milliseconds) -> String {
        if abs(skew) >= ClockSkew.hour { return "\(skew / ClockSkew.hour)h" }
        if abs(skew) >= ClockSkew.minute { return "\(skew / ClockSkew.minute)m" }
        return "\(skew)ms"
    }
}
