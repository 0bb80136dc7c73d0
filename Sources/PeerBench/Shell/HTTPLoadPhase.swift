import ChildProcesses
import DaemonClient
import Foundation

/// Phase `http`: A's HTTP API under held connections (300 idle change
/// streams and 256 never-finished request heads) while a normal client
/// asks for `/health` and writes items; then two correctness probes.
struct HTTPLoadPhase {
    let cluster: LoopbackCluster
    static let streams = 300
    static let slowHeads = 256
    /// The least time the connections are held, and the most.
    static let holdSeconds = 20.0
    static let maximumHoldSeconds = 90.0
    /// The longest wait for A to answer again after the connections are closed.
    static let recoverySeconds = 60.0

    /// Runs the phase; returns its Markdown section.
    func run() throws -> [String] {
        let a = try cluster.start("A", data: try cluster.initialize("A"))
        for index in 1...5 { try a.api.createItem("seed \(index)") }
        progress("http: baseline: 100 sequential GET /health ...")
        let baselineStats = a.daemon.sample()
        let baseline = NormalClient(api: a.api).run(health: 100, writes: 0, stop: StopFlag())

        progress("http: \(HTTPLoadPhase.streams) change streams and \(HTTPLoadPhase.slowHeads) slow heads ...")
        var peak = PeakWatch(a)
        let swarm = ConnectionSwarm(port: a.api.port)
        let stream = "GET /changes HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n"
        swarm.open(HTTPLoadPhase.streams, tag: "streams", script: StrangerScript(opening: Array(stream.utf8))) {
            peak.note()
        }
        let slow = StrangerScript(
            opening: Array("GET /health HTTP/1.1\r\nHost: x\r\n".utf8), drip: Array("X-Slow: ".utf8),
            dripForever: UInt8(ascii: "a"), dripIntervalSeconds: 3)
        swarm.open(HTTPLoadPhase.slowHeads, tag: "slow", script: slow) { peak.note() }
        let stop = StopFlag()
        let api = a.api
        let client = BackgroundWork("normal HTTP client") {
            NormalClient(api: api).run(health: 100, writes: 50, stop: stop)
        }
        let held = ContinuousClock.now
        swarm.hold(seconds: HTTPLoadPhase.maximumHoldSeconds, observe: { peak.note() }) {
            (ContinuousClock.now - held).seconds >= HTTPLoadPhase.holdSeconds && client.isFinished
        }
        stop.raise()
        let heldSeconds = (ContinuousClock.now - held).seconds
        peak.note()
        let loaded = client.wait(seconds: 15) ?? NormalClientResult()
        let streams = swarm.connections(tagged: "streams")
        let slowHeads = swarm.connections(tagged: "slow")
        swarm.closeAll()
        progress(
            "http: closed; waiting (at most \(Int(HTTPLoadPhase.recoverySeconds)) s) until A answers GET /health again ..."
        )
        let recovered = HTTPLoadPhase.waitForHealth(a.api, seconds: HTTPLoadPhase.recoverySeconds)

        progress("http: probes: invalid UTF-8 name, chunked 8 MiB body ...")
        let invalid = HTTPProbe.invalidUTF8Name(a.api)
        let chunked = HTTPProbe.chunkedUpload(port: a.api.port)

        var table = MarkdownTable(["Measure", "baseline", "with the connections held"])
        table.row("Held connections: change streams (`GET /changes`) connected", "—", HTTPLoadPhase.held(streams))
        table.row("… answered first with", "—", HTTPLoadPhase.firstLines(streams))
        table.row(
            "Held connections: slow heads (1 header byte every 3 s) connected", "—", HTTPLoadPhase.held(slowHeads))
        table.row("… answered first with", "—", HTTPLoadPhase.firstLines(slowHeads))
        table.row("Held for (s)", "—", Figure.seconds(heldSeconds))
        table.row(
            "`GET /health`: answered 200 of tried", "\(baseline.health.ok) of \(baseline.health.tried)",
            "\(loaded.health.ok) of \(loaded.health.tried)")
        table.row("`GET /health` latency p50 / max (ms)", baseline.health.figures, loaded.health.figures)
        table.row(
            "`GET /health` failed (of them timed out, 5 s)", baseline.health.failureText, loaded.health.failureText)
        table.row("`POST /items`: answered 201 of tried", "—", "\(loaded.writes.ok) of \(loaded.writes.tried)")
        table.row("`POST /items` latency p50 / max (ms)", "—", loaded.writes.figures)
        table.row("`POST /items` failed (of them timed out, 5 s)", "—", loaded.writes.failureText)
        table.row(
            "A threads (baseline: before; held: peak)", Figure.count(baselineStats.threads), Figure.count(peak.threads))
        table.row(
            "A VmRSS, MiB (baseline: before; held: peak)", Figure.mib(baselineStats.residentMiB),
            Figure.mib(peak.residentMiB))
        table.row("A open descriptors (peak)", "—", Figure.count(peak.descriptors))
        table.row(
            "A answers `GET /health` again after the close (s)", "—",
            Figure.seconds(recovered, otherwise: "**not within \(Int(HTTPLoadPhase.recoverySeconds)) s**"))
        var probes = MarkdownTable(["Correctness probe", "Daemon answered"])
        probes.row("`POST /items` with name bytes `FF FE` (invalid UTF-8), correct Content-Length", invalid)
        probes.row("`POST /items`, chunked, 64 KiB chunks up to 8 MiB: status", chunked.answer)
        probes.row(
            "… body bytes sent when the first response byte arrived", chunked.sentAtAnswer.map(Figure.count) ?? "—")
        probes.row("… body bytes sent in all", Figure.count(chunked.sent))
        var lines = [
            "### http: the HTTP API under held connections",
            "",
            "A with 5 items. The normal client: 100 sequential `GET /health`, then 50 `POST /items`, each on a new "
                + "connection with a 5 s timeout, while the connections are held (at least \(Int(HTTPLoadPhase.holdSeconds)) s).",
            "",
        ]
        lines += table.lines + [""] + probes.lines
        let notes = [("baseline", baseline.firstFailure), ("held", loaded.firstFailure)].compactMap { name, failure in
            failure.map { "- first failure of the normal client (\(name)): \($0)" }
        }
        if !notes.isEmpty { lines += [""] + notes }
        return lines
    }

    /// Polls `GET /health` (2 s timeout each) until it answers 200; the
    /// seconds that took, nil if not within `seconds`.
    static func waitForHealth(_ api: DaemonEndpoint, seconds: Double) -> Double? {
        let start = ContinuousClock.now
        let answered = Poll.until(timeout: .milliseconds(Int(seconds * 1000)), every: .milliseconds(250)) {
            (try? api.send("GET", "/health", seconds: 2))?.status == 200
        }
        return answered ? (ContinuousClock.now - start).seconds : nil
    }

    /// `300 (44 closed by A while held)`.
    static func held(_ connections: [StrangerConnection]) -> String {
        var text = "\(connections.connected) of \(connections.count)"
        let closed = connections.closedByDaemon.count
        text += closed > 0 ? ", \(closed) closed by A while held" : ", none closed by A"
        if connections.connectFailures + connections.connectTimeouts > 0 {
            text += " (\(connections.connectFailures) refused, \(connections.connectTimeouts) timed out)"
        }
        return text
    }

    /// `HTTP/1.1 200 OK × 256, nothing × 44`.
    static func firstLines(_ connections: [StrangerConnection]) -> String {
        let silent = connections.count { $0.firstLine == nil }
        let parts =
            connections.firstLines.map { "`\($0.line)` × \($0.count)" } + (silent > 0 ? ["nothing × \(silent)"] : [])
        return parts.joined(separator: ", ")
    }
}
