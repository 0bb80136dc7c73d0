import Gossip
import SyncProtocol

/// How many anti-entropy rounds a mesh of bounded fan-out needs to spread
/// one event from every replica to every replica.
///
/// Every replica knows every address but dials at most `maxOutbound` of
/// them (rotating), and live push is off so that events move only at the
/// periodic cursor exchange. The mesh forms for `warmUpMs` on a calm
/// network; then each replica appends one event of its own, and the clock
/// runs until every replica holds all of them. A round is one anti-entropy
/// interval of virtual time after the appends.
///
/// ```swift
/// let result = try ScaleExperiment.run(replicas: 64, seed: 1)
/// print(result.rounds, result.messagesPerReplica)
/// ```
public enum ScaleExperiment {
    /// The outcome for one mesh size.
    public struct Result: Sendable {
        public var replicas: Int
        /// Virtual time from the appends until every replica held every event.
        public var convergenceMs: Milliseconds
        /// `convergenceMs` in anti-entropy intervals.
        public var rounds: Double
        /// Messages sent by all replicas from the appends until then, per replica.
        public var messagesPerReplica: Double
        /// How many transfers the events needed to reach every replica.
        public var hops: HopSummary
        /// What the convergence checks found wrong; empty when all held all.
        public var failures: [String]
    }

    /// How long the mesh forms before the events are appended.
    public static let warmUpMs: Milliseconds = 3_000

    /// The scenario of one mesh size.
    public static func scenario(replicas: Int, seed: UInt64, maxOutbound: Int = 3) -> Scenario {
        var scenario = Scenario(seed: seed, replicaCount: replicas)
        scenario.faultPhaseMs = warmUpMs
        scenario.conditions = .calm
        scenario.initialEventsPerReplica = 1
        scenario.initialEventsAtMs = warmUpMs
        scenario.session.livePush = false
        scenario.peers.maxOutbound = maxOutbound
        scenario.peers.rotateEveryMs = 10_000
        scenario.convergenceCheckEveryMs = 50
        scenario.tracksHops = true
        scenario.settleLimitMs = 600_000
        return scenario
    }

    /// Runs one mesh size to convergence.
    public static func run(replicas: Int, seed: UInt64, maxOutbound: Int = 3) throws -> Result {
        let scenario = scenario(replicas: replicas, seed: seed, maxOutbound: maxOutbound)
        let report = try Simulation(scenario: scenario).run()
        let convergence = (report.convergedAtMs ?? scenario.settleLimitMs) - warmUpMs
        let messages = report.statistics.network.messagesSent - report.statistics.messagesBeforeInitialEvents
        return Result(
            replicas: replicas, convergenceMs: convergence,
            rounds: Double(convergence) / Double(scenario.antiEntropyIntervalMs),
            messagesPerReplica: Double(messages) / Double(replicas),
            hops: report.hops ?? HopSummary(maxHops: 0, meanHops: 0), failures: report.failures)
    }
}
