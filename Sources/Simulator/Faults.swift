import Gossip
import SyncProtocol

/// How the virtual network treats messages and dials during a phase.
public struct NetworkConditions: Sendable, Hashable {
    /// One-way latency of a link, drawn once per link.
    public var latencyMs: ClosedRange<Milliseconds> = 1...20
    /// A message is held back by an extra `delayMs` (and may be overtaken).
    public var delayProbability = 0.0
    public var delayMs: ClosedRange<Milliseconds> = 20...400
    /// A message is lost.
    public var dropProbability = 0.0
    /// A message arrives twice.
    public var duplicateProbability = 0.0
    /// Messages of one link arrive in the order sent (as TCP delivers them).
    public var inOrder = false
    /// How long a dial takes to connect, and to fail.
    public var dialMs: ClosedRange<Milliseconds> = 2...30
    public var dialTimeoutMs: ClosedRange<Milliseconds> = 100...2_000

    public init() {}

    /// No loss, no duplication, no reordering: the network after healing.
    public static var calm: NetworkConditions {
        var calm = NetworkConditions()
        calm.inOrder = true
        return calm
    }

    /// Random fault rates for one run; each kind of fault is off in some runs.
    public static func random(using random: inout SimulationRandom) -> NetworkConditions {
        var conditions = NetworkConditions()
        conditions.dropProbability = random.chance(0.75) ? random.double(in: 0.001...0.015) : 0
        conditions.duplicateProbability = random.chance(0.75) ? random.double(in: 0.001...0.01) : 0
        conditions.delayProbability = random.chance(0.75) ? random.double(in: 0.001...0.015) : 0
        return conditions
    }
}

/// Something that happens to the replicas at a planned virtual time.
public struct ScheduledFault: Sendable, Hashable {
    public enum Action: Sendable, Hashable {
        /// Splits the replicas: `groups[i]` is replica i's side; messages and
        /// dials between sides fail.
        case partition(groups: [Int])
        case heal
        /// The link between two replicas drops everything, dials included,
        /// while both still reach everyone else; it stays cut until the end.
        case cutLink(Int, Int)
        /// The replica's process dies: no goodbye, its log handle is closed.
        case crash(replica: Int)
        /// The replica starts again from its SQLite file.
        case restart(replica: Int)
    }

    public var at: Milliseconds
    public var action: Action

    public init(at: Milliseconds, _ action: Action) {
        self.at = at
        self.action = action
    }

    /// A random plan for `replicaCount` replicas over a fault phase of
    /// `phaseMs`: a few partitions that heal, a few crashes and restarts
    /// (a restart past the phase happens when the phase ends).
    public static func randomPlan(
        replicaCount: Int, phaseMs: Milliseconds, using random: inout SimulationRandom
    ) -> [ScheduledFault] {
        var plan: [ScheduledFault] = []
        var start: Milliseconds = 0
        for _ in 0..<random.int(in: 0...2) {
            start += random.int(in: 500...max(500, phaseMs / 2))
            guard start < phaseMs else { break }
            let sides = random.int(in: 2...min(3, replicaCount))
            var groups = (0..<replicaCount).map { _ in random.int(in: 0..<sides) }
            groups[random.int(in: 0..<replicaCount)] = sides - 1
            groups[random.int(in: 0..<replicaCount)] = 0
            let end = start + random.int(in: 1_000...10_000)
            plan.append(ScheduledFault(at: start, .partition(groups: groups)))
            plan.append(ScheduledFault(at: end, .heal))
            start = end
        }
        for _ in 0..<random.int(in: 0...max(1, replicaCount / 4)) {
            let replica = random.int(in: 0..<replicaCount)
            let crash = random.int(in: 0...phaseMs)
            plan.append(ScheduledFault(at: crash, .crash(replica: replica)))
            plan.append(ScheduledFault(at: crash + random.int(in: 500...15_000), .restart(replica: replica)))
        }
        return plan.sorted { $0.at < $1.at }
    }
}

/// Per-replica wall-clock offsets: most near true time, some minutes or
/// hours behind or ahead, and in some runs one more than a day ahead (past
/// the log's tolerated skew).
public enum ClockSkew {
    public static let minute: Milliseconds = 60_000
    public static let hour: Milliseconds = 3_600_000

    public static func random(replicaCount: Int, using random: inout SimulationRandom) -> [Milliseconds] {
        var skews = (0..<replicaCount).map { _ -> Milliseconds in
            switch random.int(in: 0..<20) {
            case 0..<8: random.int(in: -2_000...2_000)
            case 8..<11: -random.int(in: minute...120 * minute)
            case 11..<14: random.int(in: minute...120 * minute)
            case 14..<17: -random.int(in: hour...12 * hour)
            default: random.int(in: hour...12 * hour)
            }
        }
        if random.chance(0.35) {
            skews[random.int(in: 0..<replicaCount)] = random.int(in: 25 * hour...72 * hour)
        }
        return skews
    }
}

/// Counters of what the virtual network did.
public struct NetworkStatistics: Sendable, Hashable {
    public var messagesSent = 0
    public var messagesDelivered = 0
    public var drops = 0
    public var partitionDrops = 0
    public var duplicates = 0
    public var delays = 0
    /// Receivers that saw a record out of sequence and dropped the connection.
    public var channelBreaks = 0
    /// Sends that reached a restarted host and were answered with a reset.
    public var resets = 0
    public var connectionsOpened = 0
    public var closes = 0
    /// Bytes of the messages sent, as sealed frames on the wire (frame
    /// header, encoded message, tag); counted only with `Scenario.countsBytes`.
    public var bytesSent = 0
    /// The same messages by the link they took: within one site, or
    /// between two (`Scenario.sites`; without sites every link is `lan`).
    public var lan = LinkTraffic()
    public var wan = LinkTraffic()

    public init() {}
}

/// What the links of one class carried.
public struct LinkTraffic: Sendable, Hashable {
    /// Bytes of the messages sent, as sealed frames (with `Scenario.countsBytes`).
    public var bytes = 0
    public var messages = 0
    /// Node pairs whose link carried a message since the count began (the
    /// initial events, or the start).
    public var linksUsed = 0

    public init() {}

    mutating func add(_ other: LinkTraffic) {
        bytes += other.bytes
        messages += other.messages
        linksUsed += other.linksUsed
    }
}
