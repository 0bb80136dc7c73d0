import Foundation
import NetworkLab

/// A new host's first sync with an existing one, and how soon the existing
/// one notices a peer that is gone: host 1 runs `base` with `events`
/// events; a replica just joined to its cluster starts `peerd run` on
/// host 2, `runs` times with host 2's avahi cache warm (its avahi-daemon
/// ran all along) and `runs` times cold (restarted just before, as on a
/// host that just came up).
struct ArrivalPhase {
    let lab: NetLab
    let events: Int
    let runs: Int

    /// One arrival, in seconds from just before `netlab.sh spawn` of the new `peerd run`
    /// to its `peer discovered` and `peer identified` lines for base, and to holding every event.
    struct Arrival {
        var discovered: Double?
        var identified: Double
        var caughtUp: Double
    }

    /// What the phase measured.
    struct Results {
        var warm: [Arrival] = []
        var cold: [Arrival] = []
        /// From `kill -9` of a peer to base's `connection closed` line, and its `reason=`.
        var killNoticed = Double.nan
        var killReason = "?"
        /// From SIGSTOP of a peer to base's `connection closed` line, and its `reason=`.
        var hangNoticed = Double.nan
        var hangReason = "?"
    }

    /// The existing replica and its daemon, left running for the next phase.
    private(set) var base: LabDaemon?
    /// The share code of base's cluster.
    private(set) var code = ""

    init(lab: NetLab, events: Int, runs: Int) {
        self.lab = lab
        self.events = events
        self.runs = runs
    }

    mutating func run() async throws -> Results {
        let (node, _) = try await lab.initNode("base", on: 1)
        code = try await lab.ok(["cluster-code"], node)
        try await lab.ok(
            ["import", try LabWorkload.export(events, of: node.replicaID, to: lab.path("bulk.ndjson"))], node)
        let d1 = try await lab.start(node)
        base = d1
        try await lab.wait("base publishing") { d1.log.count("component=mdns", "published") > 0 }
        var results = Results()
        for run in 1...runs {
            progress("lab: arrival \(run) of \(runs), warm avahi cache")
            let (arrival, daemon) = try await arrive(cold: false, at: d1)
            results.warm.append(arrival)
            try await leave(daemon, from: d1)
        }
        var newcomer: LabDaemon?
        for run in 1...runs {
            progress("lab: arrival \(run) of \(runs), cold avahi cache")
            let (arrival, daemon) = try await arrive(cold: true, at: d1)
            results.cold.append(arrival)
            if run < runs { try await leave(daemon, from: d1) } else { newcomer = daemon }
        }
        if let newcomer { try await kill(newcomer, noticedBy: d1, into: &results) }
        try await hang(noticedBy: d1, into: &results)
        return results
    }

    /// A fresh replica on host 2 joins and syncs; base must have discovered it too before it may leave.
    private func arrive(cold: Bool, at d1: LabDaemon) async throws -> (Arrival, LabDaemon) {
        let name = "new\(lab.processes.count)"
        let (node, _) = try await lab.initNode(name, on: 2, joining: code)
        if cold {
            try await lab.avahiStop(2)
            try await lab.avahiStart(2)
        }
        let counter = try ReadOnlyEventCounter(path: node.data.appendingPathComponent("replica.db").path)
        let daemon = try await lab.start(node)
        try await lab.wait("\(name) holding base's \(events) events", every: .milliseconds(5)) {
            try counter.count() >= events
        }
        let caughtUp = Date().timeIntervalSince(daemon.startedAt)
        guard let identified = daemon.log.records(.peerIdentified, ["peer": d1.node.replicaID]).first?.loggedAt else {
            throw LabFailure("\(name) holds base's events but logged no `peer identified` for it")
        }
        let discovered = daemon.log.records(.peerDiscovered, ["peer": d1.node.replicaID]).first?.loggedAt
        try await lab.wait("base discovering \(name)") {
            !d1.log.records(.peerDiscovered, ["peer": node.replicaID]).isEmpty
        }
        let arrival = Arrival(
            discovered: discovered?.timeIntervalSince(daemon.startedAt),
            identified: identified.timeIntervalSince(daemon.startedAt), caughtUp: caughtUp)
        return (arrival, daemon)
    }

    /// Stops `daemon` and waits until base has seen its service withdrawn.
    private func leave(_ daemon: LabDaemon, from d1: LabDaemon) async throws {
        try await lab.stop(daemon)
        try await lab.wait("base seeing \(daemon.node.name)'s service withdrawn") {
            !d1.log.records(.peerWithdrawn, ["peer": daemon.node.replicaID]).isEmpty
        }
    }

    /// `kill -9`: the kernel closes the dead process's sockets, so base hears it at once.
    private func kill(_ victim: LabDaemon, noticedBy d1: LabDaemon, into results: inout Results) async throws {
        let fromHost2 = ["remote": lab.address(of: 2)]
        let closedBefore = d1.log.records(.connectionClosed, fromHost2).count
        let killedAt = try await lab.stop(victim, signal: SIGKILL)
        try await lab.wait("base losing the killed peer") {
            d1.log.records(.connectionClosed, fromHost2).count > closedBefore
        }
        let closed = d1.log.records(.connectionClosed, fromHost2)[closedBefore]
        if let noticed = closed.loggedAt { results.killNoticed = noticed.timeIntervalSince(killedAt) }
        results.killReason = closed["reason"] ?? "?"
        try await lab.wait("base seeing the killed peer's service withdrawn") {
            !d1.log.records(.peerWithdrawn, ["peer": victim.node.replicaID]).isEmpty
        }
    }

    /// SIGSTOP: a hung process keeps its connections open and silent; only the dead-peer timeout notices.
    private func hang(noticedBy d1: LabDaemon, into results: inout Results) async throws {
        progress("lab: a peer that hangs (SIGSTOP)")
        let fromHost2 = ["remote": lab.address(of: 2)]
        let (node, _) = try await lab.initNode("hung", on: 2, joining: code)
        let counter = try ReadOnlyEventCounter(path: node.data.appendingPathComponent("replica.db").path)
        let hung = try await lab.start(node)
        try await lab.wait("base identifying the peer that will hang") {
            try !d1.log.records(.peerIdentified, ["peer": node.replicaID]).isEmpty && counter.count() >= events
        }
        let closedBefore = d1.log.records(.connectionClosed, fromHost2).count
        let stoppedAt = Date()
        try hung.send(SIGSTOP)
        try await lab.wait("base closing the silent connection") {
            d1.log.records(.connectionClosed, fromHost2).count > closedBefore
        }
        let closed = d1.log.records(.connectionClosed, fromHost2)[closedBefore]
        if let noticed = closed.loggedAt { results.hangNoticed = noticed.timeIntervalSince(stoppedAt) }
        results.hangReason = closed["reason"] ?? "?"
        try await lab.stop(hung, signal: SIGKILL)
    }
}
