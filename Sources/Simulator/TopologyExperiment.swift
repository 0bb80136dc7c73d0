import Gossip
import SyncProtocol

/// What the hub saves: the same replicas as a full mesh and around one
/// relay, counting identified connections and the bytes sync sends per
/// live event.
///
/// The replicas form their connections for `warmUpMs` on a calm network
/// (in the hub, `TopologyMode.auto`: the mesh first, the hub once the
/// relay's hello arrives); then every replica (not the relay) appends
/// `eventsPerReplica` events of its own, pushed live, and the clock runs
/// until every node holds all of them and has heard its peers report that
/// state. Bytes are sealed frames as the wire carries them, from the
/// appends until then, divided by the events.
///
/// ```swift
/// let mesh = try TopologyExperiment.run(replicas: 20, topology: .mesh, seed: 1)
/// let hub = try TopologyExperiment.run(replicas: 20, topology: .hub, seed: 1)
/// print(mesh.connections, hub.connections, mesh.bytesPerLiveEvent, hub.bytesPerLiveEvent)
/// ```
public enum TopologyExperiment {
    /// The outcome for one size and topology.
    public struct Result: Sendable {
        public var replicas: Int
        public var topology: Topology
        /// Identified connections when the events were appended.
        public var connections: Int
        public var liveEvents: Int
        /// Bytes every node sent from the appends until all held all (and
        /// said so), per event.
        public var bytesPerLiveEvent: Double
        /// Messages every node sent in that time, per event.
        public var messagesPerLiveEvent: Double
        /// Virtual time from the appends until every node held every event.
        public var convergenceMs: Milliseconds
        /// What the convergence checks found wrong; empty when all held all.
        public var failures: [String]
    }

    /// How long the connections form before the events are appended.
    public static let warmUpMs: Milliseconds = 5_000

    /// The scenario: `replicas` replicas in a full mesh, or the same
    /// replicas and one relay.
    public static func scenario(replicas: Int, topology: Topology, eventsPerReplica: Int, seed: UInt64) -> Scenario {
        let relays = topology == .hub ? 1 : 0
        var scenario = Scenario(seed: seed, replicaCount: replicas + relays)
        scenario.relayCount = relays
        scenario.peers.topology = topology == .hub ? .auto : .mesh
        scenario.peers.maxOutbound = replicas + relays
        scenario.peers.rotateEveryMs = nil
        scenario.faultPhaseMs = warmUpMs
        scenario.conditions = .calm
        scenario.initialEventsPerReplica = eventsPerReplica
        scenario.initialEventsAtMs = warmUpMs
        scenario.convergenceCheckEveryMs = 50
        scenario.countsBytes = true
        return scenario
    }

    /// Runs one size in one topology to convergence.
    public static func run(replicas: Int, topology: Topology, eventsPerReplica: Int = 5, seed: UInt64) throws
        -> Result
    {
        let scenario = scenario(
            replicas: replicas, topology: topology, eventsPerReplica: eventsPerReplica, seed: seed)
        let report = try Simulation(scenario: scenario).run()
        let statistics = report.statistics
        let events = replicas * eventsPerReplica
        let bytes = statistics.network.bytesSent - statistics.bytesBeforeInitialEvents
        let messages = statistics.network.messagesSent - statistics.messagesBeforeInitialEvents
        return Result(
            replicas: replicas, topology: topology, connections: statistics.connectionsAtInitialEvents,
            liveEvents: events, bytesPerLiveEvent: Double(bytes) / Double(events),
            messagesPerLiveEvent: Double(messages) / Double(events),
            convergenceMs: (report.convergedAtMs ?? scenario.settleLimitMs) - warmUpMs, failures: report.failures)
    }
}
