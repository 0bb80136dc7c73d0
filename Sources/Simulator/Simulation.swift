import Foundation
import Gossip
import PeerNet
import Replica
import SyncProtocol

/// A deterministic run of real replicas (`EventLog` + `SyncNode`) over the
/// virtual network: virtual time, one agenda, one seeded random source.
///
/// The run has two phases. During the fault phase, replicas append locally
/// while the network loses, duplicates and delays messages, partitions
/// come and go, and replicas crash and restart. Then the network heals,
/// every crashed replica restarts, the faults stop, and the run goes on
/// until every replica holds every acknowledged event with equal state
/// hashes, or the settle limit passes; then until every session's peer has
/// reported that state (`state` messages), within
/// `Scenario.stateReportLimitMs`. `run()` then checks the outcome.
///
/// ```swift
/// let report = try Simulation(scenario: .random(seed: 12)).run()
/// print(report.passed ? "converged at \(report.convergedAtMs!) ms" : report.failureMessage)
/// ```
public final class Simulation {
    /// What the agenda holds.
    enum Occurrence {
        /// The node's deadline; stale when a sooner one was set since.
        case tick(Host)
        /// Storage answers a node's work after a delay.
        case storageAnswer(Host, StorageAnswer)
        case dialCompleted(from: Host, to: Int?, address: PeerAddress)
        case arrival(Transmission)
        /// The far end learns that its link was closed or reset.
        case hangUp(ConnectionID)
        case localAppend
        case initialEvents
        /// One of `Scenario.laterEventWavesAtMs`.
        case eventWave
        case fault(ScheduledFault.Action)
        case endOfFaults
        case convergenceCheck
        /// After convergence: have the peers reported the common state?
        case stateReportCheck
        /// One step of `Scenario.checkpoints`.
        case checkpointStep(CheckpointStep)
    }

    public let scenario: Scenario
    let clock = VirtualClock()
    var random: SimulationRandom
    var queue = EventQueue<Occurrence>()
    var network: VirtualNetwork
    let replicas: [SimulatedReplica]
    let addresses: [PeerAddress: Int]
    let logs: LogCollector
    var ledger = AcknowledgedAppends()
    var workload = WorkloadState()
    var hops: HopTracker
    /// Per replica: when its node's next tick is scheduled.
    var nextTickAt: [Int: Milliseconds] = [:]
    /// Per relay: its grants core, and the incarnation it belongs to (in
    /// memory, as the daemon keeps it: lost in a crash).
    var grantors: [Int: (incarnation: Int, grants: ClaimGrants)] = [:]
    var statistics = SimulationStatistics()
    /// What the checkpoint steps did so far (`Scenario.checkpoints`).
    var checkpointRun = CheckpointRun()
    var failures: [String] = []
    private(set) var faultsOver = false
    private(set) var convergedAt: Milliseconds?
    /// When every session's peer had reported the common state hash.
    private(set) var statesReportedAt: Milliseconds?
    let directory: SimulationDirectory

    public init(scenario: Scenario) throws {
        precondition(scenario.clockSkewMs.count == scenario.replicaCount, "one clock skew per replica")
        self.scenario = scenario
        random = SimulationRandom(seed: scenario.seed)
        network = VirtualNetwork(replicaCount: scenario.replicaCount, conditions: scenario.conditions)
        network.countsBytes = scenario.countsBytes
        network.sites = scenario.sites
        hops = HopTracker(replicaCount: scenario.replicaCount)
        let directory = try SimulationDirectory(seed: scenario.seed)
        self.directory = directory
        replicas = (0..<scenario.replicaCount).map { index in
            SimulatedReplica(index: index, directory: directory.path, skewMs: scenario.clockSkewMs[index])
        }
        addresses = Dictionary(uniqueKeysWithValues: replicas.map { ($0.address, $0.index) })
        logs = LogCollector(clock: clock, trace: scenario.trace)
    }

    var now: Milliseconds { clock.now }

    /// Runs the scenario to convergence (or its time limit) and checks it.
    public func run() throws -> SimulationReport {
        try setUp()
        let deadline = scenario.faultPhaseMs + scenario.settleLimitMs
        while convergedAt == nil || statesReportedAt == nil, failures.isEmpty, let (time, occurrence) = queue.next() {
            guard time <= deadline else { break }
            clock.advance(to: time)
            try handle(occurrence)
            // After whatever the occurrence stored (or whoever it connected): relays answer requests.
            try answerClaimRequests()
        }
        return try finish()
    }

    private func setUp() throws {
        for replica in replicas where !isAbsent(replica.index) {
            try start(replica)
        }
        scheduleCheckpointSteps()
        queue.schedule(.initialEvents, at: scenario.initialEventsAtMs)
        for _ in 0..<scenario.appendCount {
            let from = min(scenario.appendsFromMs, scenario.faultPhaseMs - 1)
            queue.schedule(.localAppend, at: random.int(in: max(0, from)..<max(1, scenario.faultPhaseMs)))
        }
        for fault in scenario.faults {
            queue.schedule(.fault(fault.action), at: fault.at)
        }
        queue.schedule(.endOfFaults, at: scenario.faultPhaseMs)
    }

    private func handle(_ occurrence: Occurrence) throws {
        switch occurrence {
        case .tick(let host):
            guard nextTickAt[host.replica] == now, let replica = replica(of: host) else { return }
            nextTickAt[host.replica] = nil
            perform(replica.node!.tick(now: now), by: host)
        case .storageAnswer(let host, let answer):
            guard let replica = replica(of: host) else { return }
            perform(answer.deliver(to: &replica.node!, now: now), by: host)
        case .dialCompleted(let from, let target, let address):
            completeDial(from: from, to: target, address: address)
        case .arrival(let transmission):
            arrive(transmission)
        case .hangUp(let id):
            hangUp(id)
        case .localAppend:
            guard !faultsOver else { return }
            try performAppendStep()
        case .initialEvents:
            statistics.messagesBeforeInitialEvents = network.statistics.messagesSent
            statistics.bytesBeforeInitialEvents = network.statistics.bytesSent
            statistics.connectionsAtInitialEvents = identifiedConnections
            statistics.lanBeforeInitialEvents = network.statistics.lan
            statistics.wanBeforeInitialEvents = network.statistics.wan
            statistics.eventsReceivedBeforeInitialEvents =
                statistics.eventsReceived + replicas.compactMap(\.node).reduce(0) { $0 + $1.statistics.eventsReceived }
            network.forgetLinksUsed()
            for replica in replicas where replica.isUp && isEventWriter(replica.index) {
                for _ in 0..<scenario.initialEventsPerReplica { appendInitialEvent(on: replica) }
            }
            for at in scenario.laterEventWavesAtMs { queue.schedule(.eventWave, at: at) }
        case .eventWave:
            let nodes = replicas.compactMap(\.node)
            statistics.eventsReceivedBeforeLastWave =
                statistics.eventsReceived + nodes.reduce(0) { $0 + $1.statistics.eventsReceived }
            statistics.eventsStoredBeforeLastWave =
                statistics.eventsStored + nodes.reduce(0) { $0 + $1.statistics.eventsStored }
            for replica in replicas where replica.isUp && isEventWriter(replica.index) {
                for _ in 0..<scenario.initialEventsPerReplica { appendInitialEvent(on: replica) }
            }
        case .fault(let action):
            try apply(action)
        case .endOfFaults:
            try endFaults()
        case .stateReportCheck:
            if let unreported = try sessionsWithoutTheCommonState() {
                if now - convergedAt! >= scenario.stateReportLimitMs {
                    failures.append(
                        "peers did not report the common state hash within \(scenario.stateReportLimitMs) ms "
                            + "after converging: \(unreported)")
                } else {
                    queue.schedule(.stateReportCheck, at: now + scenario.convergenceCheckEveryMs)
                }
            } else {
                statesReportedAt = now
            }
        case .checkpointStep(let step):
            try perform(step)
        case .convergenceCheck:
            if try everyoneConverged() {
                convergedAt = now
                queue.schedule(.stateReportCheck, at: now)
            } else {
                queue.schedule(.convergenceCheck, at: now + scenario.convergenceCheckEveryMs)
            }
        }
    }

    /// A relay among the first `Scenario.relayCount`, else a peer.
    func role(of index: Int) -> NodeRole { index < scenario.relayCount ? .relay : .peer }

    /// Identified connections between running replicas (each counted once).
    var identifiedConnections: Int {
        replicas.compactMap(\.node).map { node in node.sessions.values.filter { $0.peer != nil }.count }.reduce(0, +)
            / 2
    }

    /// The replica running as `host`, if that incarnation still runs.
    func replica(of host: Host) -> SimulatedReplica? {
        let replica = replicas[host.replica]
        return replica.runs(as: host) ? replica : nil
    }

    /// Starts (or restarts) a replica: opens its file, makes a node that
    /// knows every other replica's address, and starts its timer.
    func start(_ replica: SimulatedReplica) throws {
        var configuration = SyncNode.Configuration(
            hello: Hello(replicaID: replica.replicaID, role: role(of: replica.index), listenPort: replica.address.port))
        configuration.session = scenario.session
        configuration.peers = scenario.peers
        configuration.antiEntropyIntervalMs = scenario.antiEntropyIntervalMs
        configuration.seed = random.derivedSeed()
        if scenario.signedFeeds { configuration.identity = (replica.identityKey, nil) }
        configureCheckpoints(&configuration, of: replica)
        try replica.start(clock: clock, configuration: configuration, logger: logs.logger(for: replica.replicaID))
        network.hostStarted(replica.host)
        if let sites = scenario.sites {
            for (other, role) in sites.knownPeers(of: replica.index) {
                replica.node!.addPeer(replicas[other].address, source: .configured, role: role, now: now)
            }
        } else {
            for other in replicas where other.index != replica.index {
                replica.node!.addPeer(other.address, source: .configured, role: role(of: other.index), now: now)
            }
        }
        // The first round at a random moment, so that the nodes' rounds do not all fall together.
        nextTickAt[replica.index] = now + random.int(in: 0..<50)
        queue.schedule(.tick(replica.host), at: nextTickAt[replica.index]!)
    }

    private func apply(_ action: ScheduledFault.Action) throws {
        switch action {
        case .partition(let groups) where !faultsOver:
            network.partition(groups)
            statistics.partitions += 1
            logs.note("partition \(groups)")
        case .heal:
            network.heal()
            logs.note("heal")
        case .cutLink(let a, let b):
            network.cut(a, b)
            logs.note("cut sim-\(a)-sim-\(b)")
        case .crash(let index) where !faultsOver && replicas[index].isUp:
            network.hostCrashed(replicas[index].host)
            statistics.countEnded(replicas[index].node!)
            replicas[index].crash()
            statistics.crashes += 1
            logs.note("crash sim-\(index)")
        case .restart(let index) where !replicas[index].isUp && !isAbsent(index):
            try start(replicas[index])
            statistics.restarts += 1
            logs.note("restart sim-\(index)")
        case .partition, .crash, .restart:
            break
        }
    }

    /// Whether the replica appends the initial events and the later waves:
    /// not a relay, and among the first `Scenario.eventWriters` others.
    private func isEventWriter(_ index: Int) -> Bool {
        index >= scenario.relayCount && scenario.eventWriters.map { index < scenario.relayCount + $0 } ?? true
    }

    /// The fault phase is over: heal, restart, calm the network, and start
    /// checking for convergence.
    private func endFaults() throws {
        faultsOver = true
        try apply(.heal)
        var calm = NetworkConditions.calm
        calm.latencyMs = scenario.conditions.latencyMs
        network.conditions = calm
        for replica in replicas where !replica.isUp && !isAbsent(replica.index) {
            try apply(.restart(replica: replica.index))
        }
        logs.note("faults over; expecting \(ledger.expected.eventCount) events everywhere")
        queue.schedule(.convergenceCheck, at: now)
    }

    /// Every replica but the retired runs and holds exactly the
    /// acknowledged events (less those lost with a retired device), and
    /// all state hashes agree.
    private func everyoneConverged() throws -> Bool {
        let survivors = self.survivors
        guard survivors.allSatisfy(\.isUp) else { return false }
        let expected = expectedCursor(held: survivors.map { $0.node!.cursor })
        guard survivors.allSatisfy({ $0.node!.cursor == expected }) else { return false }
        let hashes = try Set(survivors.map { try $0.log!.stateHash() })
        return hashes.count == 1
    }

    /// Sessions whose peer has not reported the common state (hash, and the
    /// cursor that this node sees it hold), as `replica<-peer` pairs; `nil`
    /// when every session's peer has.
    private func sessionsWithoutTheCommonState() throws -> String? {
        let hash = try survivors.first?.log?.stateHash()
        var lagging: [String] = []
        for replica in replicas {
            guard let node = replica.node else { continue }
            for id in node.sessions.keys.sorted() {
                let session = node.sessions[id]!
                guard let peer = session.peer else { continue }
                let report = session.peerState
                // What `peerd wait` counts: equal cursors, and equal hashes when last compared.
                if report?.summary.hash.hex != hash || !session.peerStateIsCurrent || session.progress != (0, 0)
                    || session.stateCheck?.matched != true
                {
                    let check = session.stateCheck.map {
                        "\($0.matched ? "matched" : "differed") at \($0.cursor.eventCount)"
                    }
                    let own = node.localState.map { "\($0.cursor.eventCount)" } ?? "none"
                    let peers = report.map { "\($0.cursor.eventCount)" } ?? "none"
                    lagging.append(
                        "\(replica.replicaID)<-\(peer.replicaID) (cursor \(node.cursor.eventCount), own summary at "
                            + "\(own), peer's at \(peers), current \(session.peerStateIsCurrent), "
                            + "progress \(session.progress), check \(check ?? "none"))")
                }
            }
        }
        return lagging.isEmpty ? nil : lagging.prefix(8).joined(separator: ", ")
    }

    private func finish() throws -> SimulationReport {
        if failures.isEmpty && convergedAt == nil {
            failures.append(
                "did not converge within \(scenario.settleLimitMs) ms after the faults ended\n" + stragglerDiagnostic())
        }
        let check = try ConvergenceCheck(simulation: self).run()
        failures += check.failures
        let checkpoints = try scenario.checkpoints.map { _ in try CheckpointCheck(simulation: self).run() }
        failures += checkpoints?.failures ?? []
        statistics.droppedEvents = check.droppedEvents
        statistics.grants = check.requests.grants
        statistics.refusals = check.requests.refusals
        statistics.expiredRequests = check.requests.expired
        statistics.unansweredRequests = check.requests.unanswered
        statistics.overruledGrants = check.requests.overruled
        statistics.network = network.statistics
        statistics.forkReports = logs.forkReports.count
        statistics.warnings = logs.warnings
        statistics.clockFarAheadReports = logs.clockFarAheadReports
        for node in replicas.compactMap(\.node) {
            statistics.eventsReceived += node.statistics.eventsReceived
            statistics.eventsStored += node.statistics.eventsStored
        }
        let hash = try survivors.first.map { try $0.openForInspection(clock: clock).stateHash() }
        return SimulationReport(
            scenario: scenario, convergedAtMs: convergedAt, statistics: statistics, stateHash: hash,
            hops: scenario.tracksHops ? hops.summary : nil,
            failures: failures, recentLog: logs.recent.suffix(60).joined(separator: "\n"),
            checkpoints: checkpoints?.figures)
    }

    /// Replica `index`'s log, for a test to look into after the run: the
    /// running node's log, or the file opened again.
    public func log(of index: Int) throws -> EventLog {
        try replicas[index].openForInspection(clock: clock)
    }

    /// Who lacks what, and what each of them is connected to.
    func stragglerDiagnostic() -> String {
        var lines: [String] = []
        let expected = expectedCursor(held: survivors.compactMap { $0.node?.cursor })
        for replica in replicas {
            guard let node = replica.node else {
                lines.append("  \(replica.replicaID): \(isAbsent(replica.index) ? "retired" : "down")")
                continue
            }
            let missing = node.cursor.missingCount(from: expected)
            let extra = expected.missingCount(from: node.cursor)
            guard missing > 0 || extra > 0 else { continue }
            let peers = node.sessions.keys.sorted().map { id in
                "\(id)->\(node.sessions[id]!.peer?.replicaID ?? "?")"
            }
            let targets = node.manager.targets.values.sorted { $0.address < $1.address }.map { target in
                "\(target.address.host):\(target.state)/\(target.failures)"
            }
            lines.append(
                "  \(replica.replicaID): lacks \(missing), has \(extra) unacknowledged; sessions \(peers); "
                    + "targets \(targets)")
        }
        return lines.joined(separator: "\n")
    }
}
