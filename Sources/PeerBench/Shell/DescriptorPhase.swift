import Foundation

/// Phase `fds`: a daemon D whose descriptor limit is 64 (`ulimit -n 64`)
/// gets 200 connections on its gossip port for 3 s; once they are closed,
/// can a fresh peer E still connect, and does D still answer `/health`?
struct DescriptorPhase {
    let cluster: LoopbackCluster
    static let descriptorLimit = 64
    static let connections = 200

    /// Lines that speak of running out of descriptors.
    static let exhaustionWords = ["too many open files", "emfile", "descriptor", "open files", "errno 24"]

    /// Runs the phase; returns its Markdown section.
    func run() throws -> [String] {
        let dataD = try cluster.initialize("D")
        let dataE = try cluster.initialize("E", joining: dataD)
        let d = try cluster.start("D", data: dataD, descriptorLimit: DescriptorPhase.descriptorLimit)
        let logStart = d.daemon.logOffset
        let before = (descriptors: d.openDescriptors, threads: d.daemon.sample().threads)
        let limit = ChildStats.openFilesLimit(pid: d.daemon.pid)

        progress("fds: \(DescriptorPhase.connections) connections to D's gossip port, held 3 s ...")
        var peak = PeakWatch(d)
        let swarm = ConnectionSwarm(port: d.gossipPort)
        swarm.open(DescriptorPhase.connections, tag: "fds", script: .silent, batch: DescriptorPhase.connections) {
            peak.note()
        }
        swarm.hold(seconds: 3, observe: { peak.note() })
        let held = swarm.connections
        swarm.closeAll()
        Thread.sleep(forTimeInterval: 2)
        let descriptorsAfterClose = d.openDescriptors
        let healthAfterClose = DescriptorPhase.health(d)

        progress("fds: starting E (--peer D), waiting up to 30 s for them to connect ...")
        let e = try cluster.start("E", data: dataE, peers: [d])
        let eLogStart = e.daemon.logOffset
        let started = ContinuousClock.now
        var connected: (seconds: Double, evidence: String)?
        while connected == nil && (ContinuousClock.now - started).seconds < 30 {
            if !d.daemon.logLines(since: logStart).records(.peerIdentified).isEmpty {
                connected = ((ContinuousClock.now - started).seconds, "`peer identified` in D's log")
            } else if !e.daemon.logLines(since: eLogStart).records(.peerIdentified).isEmpty {
                connected = ((ContinuousClock.now - started).seconds, "`peer identified` in E's log")
            } else if (try? e.api.peersConnected(seconds: 2)) == 1 {
                connected = ((ContinuousClock.now - started).seconds, "E's /status: sync.peers_connected 1")
            } else {
                Thread.sleep(forTimeInterval: 0.25)
            }
        }
        let healthAtEnd = DescriptorPhase.health(d)
        let running = d.daemon.child.isRunning
        let log = d.daemon.logLines(since: logStart)
        let exhaustion = log.filter { line in
            DescriptorPhase.exhaustionWords.contains { line.lowercased().contains($0) }
        }

        var table = MarkdownTable(["Measure", "Value"])
        table.row("D's open-files limit (from /proc/PID/limits)", Figure.count(limit))
        table.row(
            "D open descriptors / threads before",
            "\(Figure.count(before.descriptors)) / \(Figure.count(before.threads))")
        table.row("Connections tried to D's gossip port", "\(DescriptorPhase.connections)")
        table.row("… TCP connect done (accepted by D or queued in its listen backlog)", "\(held.connected)")
        table.row(
            "… refused at connect",
            held.connectFailures == 0 ? "0" : "\(held.connectFailures): \(held.connectFailureReasons)")
        table.row("… connect timed out (2 s; backlog full)", "\(held.connectTimeouts)")
        table.row("… closed by D within the 3 s (of them by reset)", "\(held.closedByDaemon.count) (\(held.resets))")
        table.row(
            "D open descriptors at the peak (≈ connections it accepted + its own)", Figure.count(peak.descriptors))
        table.row("D threads at the peak", Figure.count(peak.threads))
        table.row("D open descriptors 2 s after the close", Figure.count(descriptorsAfterClose))
        table.row("D answers `GET /health` 2 s after the close", healthAfterClose)
        table.row(
            "Fresh peer E (`--peer` D) connects within 30 s",
            connected.map { "yes, after \(Figure.seconds($0.seconds)) s (\($0.evidence))" } ?? "**no**")
        table.row("D answers `GET /health` at the end", healthAtEnd)
        table.row(
            "D still running at the end",
            running ? "yes" : "**no** (\(d.daemon.child.termination.map(String.init(describing:)) ?? "?"))")
        table.row("Log lines D wrote (from its start)", Figure.count(log.count))
        table.row("… about running out of descriptors", Figure.count(exhaustion.count))
        table.row("… the first of those", Figure.logLine(exhaustion.first))
        return [
            "### fds: a daemon at its descriptor limit",
            "",
            "D runs under `/bin/sh -c 'ulimit -n \(DescriptorPhase.descriptorLimit) && exec peerd run ...'` with HTTP; "
                + "\(DescriptorPhase.connections) silent connections to its gossip port for 3 s, all closed, 2 s later "
                + "a fresh peer E of the same cluster dials D.",
            "",
        ] + table.lines
    }

    /// `GET /health`'s status line (5 s timeout), or why there was none.
    static func health(_ process: PeerProcess) -> String {
        do {
            let answer = try process.api.send("GET", "/health", seconds: 5)
            return answer.status == 200 ? "yes (\(answer.statusLine))" : "**no**: \(answer.statusLine)"
        } catch {
            return "**no**: \(error)"
        }
    }
}
