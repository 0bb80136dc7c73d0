import Gossip
import SyncProtocol

/// How many times each live event reaches each node of a full mesh, with
/// link pruning (`SyncSession.Configuration.prunesLinks`) off and on.
///
/// The mesh forms for `warmUpMs` on a calm network; then `writers`
/// replicas append `eventsPerWriter` events each, pushed live (the first
/// wave, which sets the prunes up: each origin's first events cross every
/// link, as in Plumtree), and `waveGapMs` later they do so again (the
/// measured wave). Receptions are the events of every batch a node
/// received, divided by the events it stored from peers, over the measured
/// wave: 1 when no event reached a node twice.
///
/// ```swift
/// let off = try PruningExperiment.run(replicas: 16, prunesLinks: false, seed: 1)
/// let on = try PruningExperiment.run(replicas: 16, prunesLinks: true, seed: 1)
/// print(off.receptionsPerEvent, on.receptionsPerEvent)
/// ```
public enum PruningExperiment {
    public struct Result: Sendable {
        public var replicas: Int
        public var prunesLinks: Bool
        /// Receptions per stored event over the measured wave.
        public var receptionsPerEvent: Double
        /// The same over both waves, the first (which sets the prunes up) included.
        public var receptionsWithFirstWave: Double
        public var prunes: Int
        public var grafts: Int
        /// Virtual time from the measured wave until every node held every event.
        public var convergenceMs: Milliseconds
        /// How many transfers the events needed, when the run tracked hops (`chain`).
        public var hops: HopSummary?
        public var failures: [String]
    }

    /// How long the connections form before the first wave.
    public static let warmUpMs: Milliseconds = 5_000
    /// From the first wave to the measured one.
    public static let waveGapMs: Milliseconds = 3_000

    /// The measured wave's time.
    public static var measuredWaveAtMs: Milliseconds { warmUpMs + waveGapMs }

    public static func scenario(
        replicas: Int, prunesLinks: Bool, writers: Int, eventsPerWriter: Int, seed: UInt64
    ) -> Scenario {
        var scenario = TopologyExperiment.scenario(
            replicas: replicas, topology: .mesh, eventsPerReplica: eventsPerWriter, seed: seed)
        scenario.countsBytes = false
        scenario.session.prunesLinks = prunesLinks
        scenario.eventWriters = writers
        scenario.laterEventWavesAtMs = [measuredWaveAtMs]
        // The convergence checks start after the measured wave is appended.
        scenario.faultPhaseMs = measuredWaveAtMs + 1
        return scenario
    }

    /// - Parameter maxConnections: the peer manager's cap per node
    ///   (`PeerManager.Configuration.maxConnections`, 64 by default: above
    ///   65 replicas the mesh is then not full); nil keeps the default.
    public static func run(
        replicas: Int, prunesLinks: Bool, writers: Int? = nil, eventsPerWriter: Int = 1, maxConnections: Int? = nil,
        seed: UInt64
    ) throws -> Result {
        var scenario = scenario(
            replicas: replicas, prunesLinks: prunesLinks, writers: writers ?? replicas,
            eventsPerWriter: eventsPerWriter, seed: seed)
        if let maxConnections { scenario.peers.maxConnections = maxConnections }
        return result(of: try Simulation(scenario: scenario).run(), replicas: replicas, prunesLinks: prunesLinks)
    }

    static func result(of report: SimulationReport, replicas: Int, prunesLinks: Bool) -> Result {
        let statistics = report.statistics
        return Result(
            replicas: replicas, prunesLinks: prunesLinks,
            receptionsPerEvent: statistics.receptionsPerStoredEventInLastWave,
            receptionsWithFirstWave: statistics.receptionsPerStoredEvent, prunes: statistics.prunes,
            grafts: statistics.grafts,
            convergenceMs: (report.convergedAtMs ?? report.scenario.settleLimitMs) - measuredWaveAtMs,
            hops: report.hops, failures: report.failures)
    }

    /// A tree link lost: the same mesh with pruning on, where the link
    /// between replicas 0 and 1 is cut between the waves (everything on it
    /// dropped, dials too). Replica 1 then has replica 0's events of the
    /// measured wave only through links it pruned; `convergenceMs` says how
    /// long the lazy links took to bring them, and `grafts` that they made one eager again.
    public static func lostLink(replicas: Int, eventsPerWriter: Int = 1, seed: UInt64) throws -> Result {
        var scenario = scenario(
            replicas: replicas, prunesLinks: true, writers: replicas, eventsPerWriter: eventsPerWriter, seed: seed)
        scenario.faults = [ScheduledFault(at: warmUpMs + waveGapMs / 2, .cutLink(0, 1))]
        return result(of: try Simulation(scenario: scenario).run(), replicas: replicas, prunesLinks: true)
    }

    /// A chain: every link but those between neighbours cut from the
    /// start, so that each replica connects to the one before and after it
    /// only, and every replica writes; `hops` says how deep the spread went.
    public static func chain(replicas: Int, prunesLinks: Bool, seed: UInt64) throws -> Result {
        var scenario = scenario(
            replicas: replicas, prunesLinks: prunesLinks, writers: replicas, eventsPerWriter: 1, seed: seed)
        scenario.tracksHops = true
        for a in 0..<replicas {
            for b in (a + 2)..<max(a + 2, replicas) { scenario.faults.append(ScheduledFault(at: 0, .cutLink(a, b))) }
        }
        return result(of: try Simulation(scenario: scenario).run(), replicas: replicas, prunesLinks: prunesLinks)
    }
}
