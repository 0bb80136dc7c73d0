import ChildProcesses
import Foundation
import LabReport
import NetworkLab
import Replica

/// One `peerd lab` run inside a brought-up ``NetLab``: the daemons, the
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

    private var writes: [LabReport.Write] = []
    private var acknowledged: [Int: AcknowledgedWrite] = [:]
    private var retries: [(retry: Int, original: Int)] = []
    private var samples: [LabReport.Sample] = []
    private var faultRecords: [LabReport.Fault] = []
    private var activeFaults: [Int: LabPlan.Fault] = [:]
    /// Write index in the plan → the request it sent, for retries; slot → item id.
    private var requests: [Int: (host: Int, path: String, body: String?, key: String, reportIndex: Int)] = [:]
    private var itemIDs: [Int: String] = [:]
    /// Bytes counted by daemons that have ended, by host.
    private var bytesBefore: [Int: (sent: Int64, received: Int64)] = [:]
    private var phase = "starting"
    /// Each node's vector cursor whenever it was seen to change (samples and settle polls).
    private var cursorHistory: [String: [(atMs: Int64, cursor: String)]] = [:]
    /// When the last fault was healed.
    private var lastHealMs: Int64?
    var notes: [String] = []

    init(configuration: LabConfiguration, plan: LabPlan, lab: NetLab, progress: ProgressLine) {
        self.configuration = configuration
        self.plan = plan
        self.lab = lab
        self.nodes = LabNodes(lab: lab)
        self.progress = progress
    }

    /// Milliseconds since the first daemon started.
    private var nowMs: Int64 {
        let elapsed = clock.now - origin
        return elapsed.components.seconds * 1_000 + elapsed.components.attoseconds / 1_000_000_000_000_000
    }

    private func host(ofPeer index: Int) -> Int { index + 1 }

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
        progress.update(line())
        let (nodeReports, checks) = try await check(settled: settled, lastHealMs: lastHealMs)
        progress.finish()
        return LabReport(
            configuration: LabReport.Configuration(
                nodes: configuration.peers, relays: configuration.relays, durationMs: configuration.durationMs,
                seed: configuration.seed, faults: configuration.faults.map(\.rawValue)),
            startedAtMs: startedAtMs, elapsedMs: nowMs, lastHealMs: lastHealMs, convergedAtMs: settled.convergedAtMs,
            nodes: nodeReports, faults: faultRecords, writes: writes, samples: samples, checks: checks)
    }

    // MARK: The timeline

    private enum Action {
        case write(Int)
        case faultStart(Int)
        case faultEnd(Int)
    }

    private func runTimeline() async throws {
        var actions: [(atMs: Int64, order: Int, action: Action)] = []
        for (index, write) in plan.writes.enumerated() { actions.append((write.atMs, 2, .write(index))) }
        for (index, fault) in plan.faults.enumerated() {
            actions.append((fault.startMs, 1, .faultStart(index)))
            actions.append((fault.endMs, 0, .faultEnd(index)))
        }
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
            case .write(let index): try await send(index)
            case .faultStart(let index): try await startFault(index)
            case .faultEnd(let index): try await healFault(index)
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
        try await LabFaults(lab: lab, nodes: nodes).start(fault)
        activeFaults[index] = fault
        faultRecords.append(
            LabReport.Fault(
                kind: fault.kind.rawValue, startMs: nowMs, endMs: nowMs, nodes: fault.hosts.map(name(of:)),
                description: describe(fault)))
    }

    private func healFault(_ index: Int) async throws {
        let fault = plan.faults[index]
        if fault.kind == .clock { try await countBytesBeforeStop(fault.hosts[0]) }
        try await LabFaults(lab: lab, nodes: nodes).heal(fault)
        activeFaults[index] = nil
        lastHealMs = nowMs
        if let record = faultRecords.lastIndex(where: {
            $0.kind == fault.kind.rawValue && $0.nodes == fault.hosts.map(name(of:)) && $0.endMs == $0.startMs
        }) {
            faultRecords[record].endMs = nowMs
        }
    }

    private func name(of host: Int) -> String { nodes.member(on: host).node.name }

    private func describe(_ fault: LabPlan.Fault) -> String {
        let names = fault.hosts.map(name(of:))
        switch fault.kind {
        case .partition:
            let rest = nodes.members.map(\.node.name).filter { !names.contains($0) }
            return names.joined(separator: " ") + " | " + rest.joined(separator: " ")
        case .rate: return "\(names[0]) link limited to \(fault.parameter) kbit/s"
        case .kill: return "kill -9 of \(names[0]), restarted at the heal"
        case .stop: return "SIGSTOP of \(names[0]), SIGCONT at the heal"
        case .avahi: return "avahi-daemon of \(names[0]) killed, restarted at the heal"
        case .clock: return "\(names[0]) restarted with its clock \(fault.parameter / 1000) s off"
        }
    }

    // MARK: Writes

    private func send(_ index: Int) async throws {
        let write = plan.writes[index]
        var host = host(ofPeer: write.node)
        let key = "lab-\(configuration.seed)-\(index)"
        var path: String
        var body: String?
        var requestKey = key
        var original: Int?
        switch write.kind {
        case .create:
            path = "/items"
            body = #"{"name":"Item \#(write.slot)","quantity":\#(write.value)}"#
        case .retry:
            guard let request = requests[Int(write.value)] else { return }
            (host, path, body, requestKey) = (request.host, request.path, request.body, request.key)
            original = request.reportIndex
        default:
            guard let item = itemIDs[write.slot] else { return }
            path = "/items/\(item)/events"
            switch write.kind {
            case .rename: body = #"{"type":"Renamed","name":"Item \#(write.slot) v\#(write.value)"}"#
            case .quantity: body = #"{"type":"QuantityChanged","quantity":\#(write.value)}"#
            case .note: body = #"{"type":"NoteChanged","note":"note \#(write.value)"}"#
            case .delete: body = #"{"type":"Deleted"}"#
            default:
                path = "/items/\(item)/undo"
                body = nil
            }
        }
        let atMs = nowMs
        let reply = try await NodeAPI(lab: lab, host: host).request(
            "POST", path, body: body ?? (write.kind == .undo ? "" : nil), idempotencyKey: requestKey,
            timeoutSeconds: 1)
        let event = reply.succeeded ? reply.object : nil
        if write.kind == .create, let entity = event?["entity_id"] as? String { itemIDs[write.slot] = entity }
        let item = itemIDs[write.slot] ?? "slot \(write.slot)"
        let reportIndex = writes.count
        writes.append(
            LabReport.Write(
                node: name(of: host), atMs: atMs, kind: write.kind.rawValue, item: item, acknowledged: event != nil))
        if write.kind != .retry { requests[index] = (host, path, body, requestKey, reportIndex) }
        if let eventID = (event?["replica_event_id"] as? String)?.lowercased() {
            acknowledged[reportIndex] = AcknowledgedWrite(
                index: reportIndex, node: name(of: host), kind: write.kind.rawValue, item: item, eventID: eventID)
            if let original { retries.append((reportIndex, original)) }
        }
    }

    // MARK: Samples and progress

    private func sample() {
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
        progress.update(line())
    }

    /// Records `cursor` in ``cursorHistory`` when it differs from the node's last one.
    private func noteCursor(_ node: String, _ cursor: String, at atMs: Int64) {
        if cursorHistory[node]?.last?.cursor != cursor { cursorHistory[node, default: []].append((atMs, cursor)) }
    }

    static func text(_ cursor: VectorCursor) -> String {
        cursor.heads.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
    }

    private func line() -> String {
        let active = Set(activeFaults.values.map(\.kind.rawValue)).sorted().joined(separator: ",")
        var latest: [String: Int64] = [:]
        for sample in samples.suffix(nodes.members.count) { latest[sample.node] = sample.events }
        let events = nodes.members.map { "\($0.node.name)=\(latest[$0.node.name].map(String.init) ?? "-")" }
        return "[lab seed \(configuration.seed)] \(phase) \(String(format: "%.1f", Double(nowMs) / 1000)) s"
            + " faults: \(active.isEmpty ? "none" : active) writes: \(writes.count) events: "
            + events.joined(separator: " ")
    }

    /// Reads a node's database in this process, read-only, beside its daemon.
    static func readLog<T>(_ node: LabNode, _ body: (EventLog) throws -> T) throws -> T {
        var options = EventLog.Options()
        options.readOnly = true
        let log = try EventLog.open(at: node.data.appendingPathComponent("replica.db").path, options: options)
        return try body(log)
    }

    // MARK: Settle

    struct Settled {
        var convergedAtMs: Int64?
        /// Per node, when its cursor last changed, to the one all nodes ended with (ms since the start).
        var convergedAt: [String: Int64]
        /// The nodes that did not hold the common state at the deadline, with what they held.
        var laggards: [String]
    }

    private func settle(from lastHealMs: Int64) async throws -> Settled {
        var nextSampleMs = nowMs
        var convergedAtMs: Int64?
        var states: [String: (cursor: String, hash: String)] = [:]
        while nowMs - lastHealMs < configuration.settleMs {
            let atMs = nowMs
            for member in nodes.members {
                let name = member.node.name
                guard
                    let state: (cursor: String, hash: String) = try? Self.readLog(
                        member.node, { (Self.text(try $0.cursor()), try $0.stateHash()) })
                else {
                    states[name] = nil
                    continue
                }
                states[name] = state
                noteCursor(name, state.cursor, at: atMs)
            }
            if states.count == nodes.members.count && Set(states.values.map { "\($0.cursor) \($0.hash)" }).count == 1 {
                convergedAtMs = atMs
                break
            }
            if nowMs >= nextSampleMs {
                sample()
                nextSampleMs += 500
            }
            try await Task.sleep(for: .milliseconds(200))
        }
        var convergedAt: [String: Int64] = [:]
        var laggards: [String] = []
        for member in nodes.members {
            let name = member.node.name
            if convergedAtMs != nil, let last = cursorHistory[name]?.last {
                convergedAt[name] = max(last.atMs, lastHealMs)
            } else {
                let held = states[name].map { "cursor \($0.cursor), state hash \($0.hash)" } ?? "an unreadable file"
                laggards.append("\(name) holds \(held)")
            }
        }
        return Settled(convergedAtMs: convergedAtMs, convergedAt: convergedAt, laggards: laggards)
    }

    // MARK: Metrics

    private func metrics(_ host: Int) async throws -> (sent: Int64, received: Int64)? {
        let reply = try await NodeAPI(lab: lab, host: host).request("GET", "/metrics")
        guard reply.succeeded else { return nil }
        func total(_ metric: String) -> Int64 {
            reply.body.split(separator: "\n").filter { $0.hasPrefix(metric + " ") || $0.hasPrefix(metric + "{") }
                .compactMap { Double($0.split(separator: " ").last ?? "").map { Int64($0) } }.reduce(0, +)
        }
        return (total("peersync_bytes_sent_total"), total("peersync_bytes_received_total"))
    }

    /// Adds what host `host`'s daemon counted so far to ``bytesBefore``, before it is stopped.
    private func countBytesBeforeStop(_ host: Int) async throws {
        guard let counted = try await metrics(host) else { return }
        let before = bytesBefore[host] ?? (0, 0)
        bytesBefore[host] = (before.sent + counted.sent, before.received + counted.received)
    }

    // MARK: The planted divergence

    /// Stops the last peer, removes the newest event of another replica's feed from its `replica.db`,
    /// and starts it again: a divergence the checks must find.
    private func plantDivergence() async throws {
        phase = "plant"
        let host = configuration.peers
        let member = nodes.member(on: host)
        try await countBytesBeforeStop(host)
        let started = nowMs
        try await nodes.stop(host)
        let database = member.node.data.appendingPathComponent("replica.db").path
        let query = """
            SELECT local_offset FROM events JOIN feeds ON feeds.id = events.feed
            WHERE feeds.replica_id <> '\(member.node.replicaID)' ORDER BY local_offset DESC LIMIT 1;
            """
        let found = try await ChildProcess.run(URL(fileURLWithPath: "/usr/bin/sqlite3"), [database, query])
        let offset = found.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        guard found.status == 0, let local = Int64(offset) else {
            throw LabFailure("--plant divergence: no event of another replica on \(member.node.name): \(found)")
        }
        let removed = try await ChildProcess.run(
            URL(fileURLWithPath: "/usr/bin/sqlite3"),
            [database, "PRAGMA foreign_keys=OFF; DELETE FROM events WHERE local_offset = \(local);"])
        guard removed.status == 0 else { throw LabFailure("--plant divergence: \(removed)") }
        try await nodes.startDaemon(host)
        faultRecords.append(
            LabReport.Fault(
                kind: "plant", startMs: started, endMs: nowMs, nodes: [member.node.name],
                description: "event at local offset \(local) removed from \(member.node.name)'s replica.db (test only)")
        )
        notes.append("planted: event at local offset \(local) removed from \(member.node.name)'s replica.db")
    }

    // MARK: Checks

    private func check(settled: Settled, lastHealMs: Int64) async throws -> ([LabReport.Node], [LabReport.Check]) {
        var observations: [NodeObservation] = []
        var exports: [String] = []
        var reports: [LabReport.Node] = []
        for member in nodes.members {
            let node = member.node
            let api = NodeAPI(lab: lab, host: node.host)
            let statusReply = try await api.request("GET", "/status", timeoutSeconds: 10)
            let status = try JSONDecoder().decode(NodeStatus.self, from: Data(statusReply.body.utf8))
            let itemsReply = try await api.request("GET", "/items?include_deleted=true", timeoutSeconds: 10)
            let exported = try await ChildProcess.run(
                URL(fileURLWithPath: configuration.peerd), ["export", "--data", node.data.path])
            guard exported.status == 0 else { throw LabFailure("peerd export of \(node): \(exported)") }
            exports.append(exported.stdout)
            let events = try ReferenceFold.union([exported.stdout])
            observations.append(
                NodeObservation(
                    name: node.name, cursor: status.cursorHeads, stateHash: status.state_hash, forks: status.forks,
                    eventIDs: Set(events.map { "\($0.eventID)".lowercased() }),
                    items: try ItemList.states(itemsReply.body)))
            nodes.notePeakRSS(node.host)
            let counted = try await metrics(node.host) ?? (0, 0)
            let before = bytesBefore[node.host] ?? (0, 0)
            reports.append(
                LabReport.Node(
                    name: node.name, host: node.host, role: member.role, replicaID: node.replicaID,
                    events: status.event_count, cursor: status.cursorHeads, stateHash: status.state_hash,
                    convergedAfterHealMs: settled.convergedAt[node.name].map { $0 - lastHealMs },
                    bytesSent: before.sent + counted.sent, bytesReceived: before.received + counted.received,
                    peakRSSBytes: nodes.peakRSS[node.host] ?? 0))
        }
        let union = try ReferenceFold.union(exports)
        let eventBytes = union.reduce(0) { $0 + EventJSON.line(for: $1, offset: nil, arrivalTimeMs: nil).utf8.count }
        notes.append("\(union.count) distinct events, \(eventBytes) bytes as NDJSON without server fields")
        let reference = try ReferenceFold.items(of: union)
        let acknowledgedWrites = acknowledged.keys.sorted().compactMap { acknowledged[$0] }
        let retryPairs = retries.compactMap { pair in
            acknowledged[pair.retry].flatMap { retry in acknowledged[pair.original].map { (retry, $0) } }
        }
        let convergence = LabReport.Check(
            name: "converged-after-heal", passed: settled.convergedAtMs != nil,
            details: settled.convergedAtMs == nil
                ? ["no common state within \(configuration.settleMs) ms of the last heal"] + settled.laggards : [])
        let checks = [
            convergence,
            LabChecks.sameState(observations),
            LabChecks.sameEvents(observations),
            LabChecks.acknowledgedWritesEverywhere(acknowledgedWrites, observations),
            LabChecks.projectionsMatchFold(reference, observations),
            LabChecks.noForks(observations),
            LabChecks.retriesIdempotent(retryPairs),
        ]
        return (reports, checks)
    }
}

/// The parts of `GET /status` the checks read.
struct NodeStatus: Decodable {
    struct Head: Decodable {
        var replica_id: String
        var scope: String
        var seq: UInt64
    }

    var cursor: [Head]
    var state_hash: String
    var event_count: Int64
    var forks: Int64

    var cursorHeads: [String: UInt64] {
        Dictionary(cursor.map { ("\($0.replica_id)/\($0.scope)", $0.seq) }, uniquingKeysWith: max)
    }
}
