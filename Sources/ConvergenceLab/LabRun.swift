import ChildProcesses
import Foundation
import LabReport
import NetworkLab
import Replica

/// One `peerd-lab` run inside a brought-up ``NetLab``: the daemons, the
/// timeline of writes, faults and samples, the settle phase, the checks.
final class LabRun {
    let configuration: LabConfiguration
    let plan: LabPlan
    let lab: NetLab
    let nodes: LabNodes
    let progress: ProgressLine
    private let clock = ContinuousClock()
    private var origin = ContinuousClock.now
    private(set) var startedAtMs: Int64 = 0

    /// The workload's records, once it ended; ``counts`` while it runs.
    var writes: [LabReport.Write] = []
    var acknowledged: [Int: AcknowledgedWrite] = [:]
    var retries: [(retry: Int, original: Int)] = []
    private let counts = WorkloadCounts()
    private var samples: [LabReport.Sample] = []
    var faultRecords: [LabReport.Fault] = []
    private var activeFaults: [Int: LabPlan.Fault] = [:]
    /// The frame relays of the delay faults in force; killed with the run if it ends before their heal.
    private let links: LabLinks
    /// Fault kinds asked for that this run's peerd cannot make, with why.
    let unavailable: [String: String]
    /// The plan's fault index → its band in ``faultRecords``.
    private var records: [Int: Int] = [:]
    /// Bytes counted by daemons that have ended, by host.
    var bytesBefore: [Int: (sent: Int64, received: Int64)] = [:]
    var phase = "starting"
    /// Each node's vector cursor whenever it was seen to change (samples and settle polls).
    var cursorHistory: [String: [(atMs: Int64, cursor: String)]] = [:]
    /// When the last fault was healed.
    var lastHealMs: Int64?
    var notes: [String] = []

    init(
        configuration: LabConfiguration, plan: LabPlan, lab: NetLab, progress: ProgressLine,
        unavailable: [String: String] = [:]
    ) {
        self.configuration = configuration
        self.plan = plan
        self.lab = lab
        self.nodes = LabNodes(lab: lab)
        self.progress = progress
        self.unavailable = unavailable
        self.links = LabLinks(relay: configuration.labLink)
    }

    /// Milliseconds since the first daemon started.
    var nowMs: Int64 { (clock.now - origin).wholeMilliseconds }

    /// Runs everything and returns the report.
    func run() async throws -> LabReport {
        phase = "init"
        try await nodes.initialise(peers: configuration.peers, relays: configuration.relays)
        origin = clock.now
        startedAtMs = Int64(Date().timeIntervalSince1970 * 1000)
        for member in nodes.members { try await nodes.startDaemon(member.node.host) }
        phase = "faults"
        try await runTimeline()
        let lastHealMs = self.lastHealMs ?? nowMs
        phase = "settle"
        let settled = try await settle(from: lastHealMs)
        if configuration.plantDivergence { try await plantDivergence() }
        phase = "checks"
        progress.update(state())
        let (nodeReports, checks) = try await check(settled: settled, lastHealMs: lastHealMs)
        var conflicts = LabReport.Conflicts.tally(writes, faults: faultRecords)
        (conflicts.claimsOverruled, conflicts.droppedEvents) = try await sessionOutcomes()
        progress.finish()
        return LabReport(
            configuration: LabReport.Configuration(
                nodes: configuration.peers, relays: configuration.relays, durationMs: configuration.durationMs,
                seed: configuration.seed, faults: configuration.faults.map(\.rawValue), rate: configuration.rate,
                unavailable: unavailable.isEmpty ? nil : unavailable),
            startedAtMs: startedAtMs, elapsedMs: nowMs, lastHealMs: lastHealMs, convergedAtMs: settled.convergedAtMs,
            nodes: nodeReports, faults: faultRecords, writes: writes, samples: samples, checks: checks,
            conflicts: conflicts)
    }

    // MARK: The timeline

    private enum Action {
        case faultStart(Int)
        case faultEnd(Int)
        /// The last write's time: samples go on until then.
        case end
    }

    /// The workload on a task of its own, and here the faults, in plan order, with a sample every 500 ms.
    private func runTimeline() async throws {
        let peers = (1...configuration.peers)
        let workload = WorkloadPlan(
            writes: plan.writes, seed: configuration.seed,
            namespaces: Dictionary(uniqueKeysWithValues: peers.map { ($0, lab.namespace(of: $0)) }),
            names: Dictionary(uniqueKeysWithValues: peers.map { ($0, name(of: $0)) }), origin: origin)
        let counts = counts
        let outcome = try await withThrowingTaskGroup(of: Workload.Outcome.self) { group in
            group.addTask { try await Workload(workload, counts: counts).run() }
            do {
                try await runFaults()
            } catch {
                group.cancelAll()
                throw error
            }
            return try await group.next()!
        }
        (writes, acknowledged, retries) = (outcome.writes, outcome.acknowledged, outcome.retries)
    }

    private func runFaults() async throws {
        var actions: [(atMs: Int64, order: Int, action: Action)] = []
        for (index, fault) in plan.faults.enumerated() {
            actions.append((fault.startMs, 1, .faultStart(index)))
            actions.append((fault.endMs, 0, .faultEnd(index)))
        }
        actions.append((plan.writes.last?.atMs ?? 0, 2, .end))
        actions.sort { ($0.atMs, $0.order) < ($1.atMs, $1.order) }
        var nextSampleMs: Int64 = 0
        for (atMs, _, action) in actions {
            while nextSampleMs <= atMs {
                try await sleep(until: nextSampleMs)
                sample()
                nextSampleMs += 500
            }
            try await sleep(until: atMs)
            switch action {
            case .faultStart(let index): try await startFault(index)
            case .faultEnd(let index): try await healFault(index)
            case .end: break
            }
        }
    }

    private func sleep(until ms: Int64) async throws {
        let wait = ms - nowMs
        if wait > 0 { try await Task.sleep(for: .milliseconds(wait)) }
        try Task.checkCancellation()
    }

    private func startFault(_ index: Int) async throws {
        let fault = plan.faults[index]
        if fault.kind == .kill || fault.kind == .clock { try await countBytesBeforeStop(fault.hosts[0]) }
        try await LabFaults(lab: lab, nodes: nodes, links: links).start(fault)
        activeFaults[index] = fault
        let startedMs = nowMs
        records[index] = faultRecords.count
        faultRecords.append(
            LabReport.Fault(
                kind: fault.kind.rawValue, startMs: startedMs, endMs: startedMs, nodes: fault.hosts.map(name(of:)),
                description: describe(fault)))
    }

    private func healFault(_ index: Int) async throws {
        let fault = plan.faults[index]
        if fault.kind == .clock { try await countBytesBeforeStop(fault.hosts[0]) }
        try await LabFaults(lab: lab, nodes: nodes, links: links).heal(fault)
        activeFaults[index] = nil
        let healedMs = nowMs
        lastHealMs = healedMs
        if let record = records[index] { faultRecords[record].endMs = healedMs }
    }

    func name(of host: Int) -> String { nodes.member(on: host).node.name }

    private func describe(_ fault: LabPlan.Fault) -> String {
        let names = fault.hosts.map(name(of:))
        switch fault.kind {
        case .partition:
            let rest = nodes.members.map(\.node.name).filter { !names.contains($0) }
            return names.joined(separator: " ") + " | " + rest.joined(separator: " ")
        case .rate: return "\(names[0]) link limited to \(fault.parameter) kbit/s"
        case .delay: return "\(names[0]) link delayed \(fault.parameter) ms each way"
        case .loss: return "\(names[0]) loses \(Double(fault.parameter) / 10)% of its packets"
        case .kill: return "kill -9 of \(names[0]), restarted at the heal"
        case .stop: return "SIGSTOP of \(names[0]), SIGCONT at the heal"
        case .avahi: return "avahi-daemon of \(names[0]) killed, restarted at the heal"
        case .clock: return "\(names[0]) restarted with its clock \(fault.parameter / 1000) s off"
        }
    }

    // MARK: Samples and progress

    func sample() {
        let atMs = nowMs
        for member in nodes.members {
            nodes.notePeakRSS(member.node.host)
            if let (count, cursor) = try? Self.readLog(
                member.node, { (try $0.eventCount(), Self.text(try $0.cursor())) })
            {
                samples.append(LabReport.Sample(node: member.node.name, atMs: atMs, events: count))
                noteCursor(member.node.name, cursor, at: atMs)
            }
        }
        progress.update(state())
    }

    /// Records `cursor` in ``cursorHistory`` when it differs from the node's last one.
    func noteCursor(_ node: String, _ cursor: String, at atMs: Int64) {
        if cursorHistory[node]?.last?.cursor != cursor { cursorHistory[node, default: []].append((atMs, cursor)) }
    }

    static func text(_ cursor: VectorCursor) -> String {
        cursor.heads.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
    }

    /// What the progress line shows now.
    func state() -> ProgressLine.State {
        var latest: [String: Int64] = [:]
        for sample in samples.suffix(nodes.members.count) { latest[sample.node] = sample.events }
        return ProgressLine.State(
            seed: configuration.seed, phase: phase, atMs: nowMs,
            faults: Set(activeFaults.values.map(\.kind.rawValue)).sorted(),
            writes: counts.sent.load(ordering: .relaxed), acknowledged: counts.acknowledged.load(ordering: .relaxed),
            events: latest)
    }

    /// Reads a node's database in this process, read-only, beside its daemon.
    static func readLog<T>(_ node: LabNode, _ body: (EventLog) throws -> T) throws -> T {
        var options = EventLog.Options()
        options.readOnly = true
        let log = try EventLog.open(at: node.data.appendingPathComponent("replica.db").path, options: options)
        return try body(log)
    }
}
