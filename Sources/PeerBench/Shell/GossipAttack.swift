import Foundation

/// One kind of stranger traffic against a daemon's gossip port: how many
/// connections, what each sends, and how long they are held.
struct GossipAttack: Sendable {
    /// Its column in the report, e.g. `idle`.
    let name: String
    let connections: Int
    let script: StrangerScript
    /// How long the connections are held after the last one connected.
    let holdSeconds: Double
    /// Live samples are spread over the hold: one every this many ms.
    var sampleIntervalMs: Int { max(20, Int(holdSeconds * 1000) / 100) }

    /// 1,000 connections that send nothing, held 15 s.
    static let idle = GossipAttack(name: "idle", connections: 1_000, script: .silent, holdSeconds: 15)

    /// 400 connections that announce a 4 MiB frame (`00 40 00 00`, type 1)
    /// and then send random bytes as fast as the socket takes them for 5 s
    /// (at most the announced frame); held 8 s.
    static let oversized = GossipAttack(
        name: "oversized", connections: 400,
        script: StrangerScript(
            opening: [0x00, 0x40, 0x00, 0x00, 0x01], floodBytes: 4_194_304 - 1, floodSeconds: 5),
        holdSeconds: 8)

    /// 50 connections that send a valid handshake init (43 bytes: length
    /// 39, type 1, `PSYN`, version 1, 32 random key bytes) one byte every 3 s; held 40 s.
    static let trickle = GossipAttack(
        name: "trickle", connections: 50,
        script: StrangerScript(drip: handshakeInit, dripIntervalSeconds: 3), holdSeconds: 40)

    static let all = [idle, oversized, trickle]

    /// `00 00 00 27 01 "PSYN" 00 02` (version 2) and 32 random bytes.
    static var handshakeInit: [UInt8] {
        let key = (0..<32).map { _ in UInt8.random(in: 0...255) }
        return [0x00, 0x00, 0x00, 0x27, 0x01] + Array("PSYN".utf8) + [0x00, 0x02] + key
    }
}

/// What one attack did to the daemon.
struct AttackResult {
    let attack: GossipAttack
    /// Every connection, as it ended up.
    var connections: [StrangerConnection] = []
    /// Seconds the connections were held (after the last connected).
    var heldSeconds = 0.0
    /// The daemon while the connections were held.
    var peak: PeakWatch
    /// Live samples taken while held.
    var live = LiveSamples()
    /// Log lines the daemon wrote while the connections were held.
    var logLinesHeld: [Substring] = []
    /// Log lines from the start until its threads settled after the close.
    var logLinesAll: [Substring] = []
    /// A write after the close, to the receiver: its latency, nil if it did not arrive.
    var afterwards = LiveSamples()
    /// Seconds until the daemon's threads were back near the baseline; nil if not within the wait.
    var settleSeconds: Double?
    /// Its thread count when the wait ended.
    var threadsAfter: Int?
    /// Its threads by name when they did not settle.
    var threadNamesAfter: String?
    /// How the daemon ended, if it is no longer running after the attack.
    var exitAfter: String?
}

extension GossipPhase {
    /// Runs `attack` against A while `probe` samples A→B, then closes
    /// everything and waits (at most 30 s) for A's threads to settle near `baselineThreads`.
    func measure(_ attack: GossipAttack, on a: PeerProcess, probe: LiveProbe, baselineThreads: Int) -> AttackResult {
        progress(
            "gossip: \(attack.name): \(attack.connections) connections to A, held \(Int(attack.holdSeconds)) s ...")
        let logStart = a.daemon.logOffset
        var result = AttackResult(attack: attack, peak: PeakWatch(a))
        var peak = result.peak
        let swarm = ConnectionSwarm(port: a.gossipPort)
        swarm.open(attack.connections, tag: attack.name, script: attack.script) { peak.note() }
        let interval = attack.sampleIntervalMs
        let stop = StopFlag()
        let samples = BackgroundWork("live samples during \(attack.name)") {
            probe.run(count: 100, intervalMs: interval, stop: stop)
        }
        let held = ContinuousClock.now
        // Held for the planned time, and longer (at most a minute) while the samples are not all taken.
        swarm.hold(seconds: attack.holdSeconds + 60, observe: { peak.note() }) {
            (ContinuousClock.now - held).seconds >= attack.holdSeconds && samples.isFinished
        }
        // Samples still under way when the hold's minute ran out stop after their current write.
        stop.raise()
        result.heldSeconds = (ContinuousClock.now - held).seconds
        peak.note()
        result.peak = peak
        result.connections = swarm.connections
        result.logLinesHeld = a.daemon.logLines(since: logStart)
        result.live = samples.wait(seconds: 30) ?? LiveSamples(firstFailure: "the samples did not finish")
        swarm.closeAll()
        progress("gossip: \(attack.name): closed; checking that a new write still reaches B ...")
        probe.sample(0, into: &result.afterwards)
        result.settleSeconds = a.waitForThreads(atMost: baselineThreads + 2, seconds: 30)
        result.threadsAfter = a.daemon.sample().threads
        result.exitAfter = a.exitDescription
        if result.settleSeconds == nil && result.exitAfter == nil { result.threadNamesAfter = a.threadNames() }
        result.logLinesAll = a.daemon.logLines(since: logStart)
        let closed = result.connections.closedByDaemon.count
        progress(
            "gossip: \(attack.name): A peaked at \(result.peak.threads) threads, "
                + "\(Figure.mib(result.peak.residentMiB)) MiB; closed \(closed) of \(result.connections.connected)")
        return result
    }
}
