import Foundation
import Replica
import SyncProtocol

/// One fresh replica B started beside a running A, while a live writer
/// writes to A (or with A quiet): timed from B's launch until it is ready,
/// then the writer stops and both must end with the same state.
///
/// Ready comes in two strengths, both read from `/status` of B and of A
/// taken back to back every ``pollInterval``, and both confirmed by `GET
/// /items` of B, then of A, listing as many items:
/// - *same state*: B is connected, misses no event of A's (`events_missing`
///   0), and both show the same state hash;
/// - *`peerd wait`*: the same, and B's `peers_in_sync` ≥ 1, which is what
///   `peerd wait --converged-with 1` waits for.
struct FreshStart {
    /// How B gets A's state.
    enum Mode: String {
        /// `peerd run` as users run it (`--start-from checkpoint`, the default).
        case checkpoint
        /// `peerd run --start-from replay`: the whole history.
        case replay
    }

    let mode: Mode
    /// Names B's data directory and log.
    let name: String
    let site: any BootstrapSite
    let source: BootstrapDaemon
    /// A's cluster code, for `peerd init --join`.
    let code: String
    /// Items the live writer edits.
    let itemIDs: [String]
    /// The live writer's rate on A; 0: A takes no writes.
    let writesPerSecond: Int
    /// The longest B may take to show the same state as A.
    let deadlineSeconds: Double
    /// How often the bench reads B's `/status` while it waits; every
    /// ``coarseInterval`` while B misses more than ``coarseMissing`` events
    /// (a replay), since every read of a growing log hashes its whole state.
    static let pollInterval = Duration.milliseconds(20)
    static let coarseInterval = Duration.milliseconds(500)
    static let coarseMissing = 50_000
    /// How long polling goes on after *same state* for `peerd wait`'s readiness.
    static let inSyncGraceSeconds = 10.0

    /// Everything one fresh start measured; times are seconds since B's launch.
    struct Result {
        var mode: Mode
        var writesPerSecond: Int
        /// The site's `peerd run` returned: B printed its gossip address (and on loopback its HTTP address).
        var launchedSeconds = 0.0
        /// B's `/status` answered for the first time.
        var firstAnswerSeconds: Double?
        /// B's `/status` first showed a checkpoint.
        var checkpointShownSeconds: Double?
        /// The `checkpoint.started` record first seen in B's log (polled with `/status`).
        var startedLoggedSeconds: Double?
        /// B's own timestamps (`ts=` of its log records, against the wall clock at its launch): it
        /// listened, identified A, and logged `checkpoint.started`.
        var listeningLogged: Double?
        var identifiedLogged: Double?
        var startedLogged: Double?
        var started: LogRecord?
        /// `/status`: B connected, `events_missing` 0, A's state hash (before `/items` were compared).
        var sameStateSeconds: Double?
        /// Then `GET /items` of B listed as many items as A's: ready (same state).
        var readySeconds: Double?
        /// B's `peers_in_sync` first ≥ 1, whatever else.
        var firstInSyncSeconds: Double?
        /// Ready as `peerd wait --converged-with 1` sees it, with equal state hashes and item counts.
        var waitReadySeconds: Double?
        /// Rounds in which `/status` showed the same state but the item counts differed.
        var itemMisses = 0
        /// Rounds from B's start (its checkpoint shown; replaying, its first answer) until ready in which B
        /// missed events (`events_missing` > 0), and in which it missed none but the two state hashes
        /// differed (a write fell between the two reads, or B had not folded it yet).
        var missingRounds = 0
        var hashMisses = 0
        /// B's `GET /items`, read at once with A's, each time they were compared.
        var receiverItems: [Duration] = []
        /// The load average (1 min) just before B's launch.
        var loadAtLaunch = ""
        var items = 0
        /// B's and A's `event_count` at the ready moment (B's counts only what it holds).
        var eventsHeld = 0
        var sourceEvents = 0
        var historyHeld: Bool?
        /// B's `peersync_bytes_received_total` just after ready, and at the end.
        var receivedAtReady: Double?
        var receivedAtEnd: Double?
        /// Round trips of `GET /status` while waiting: of B alone, and of B and A read at once.
        var receiverStatus: [Duration] = []
        var sourceStatus: [Duration] = []
        /// The live writer during the whole measurement (from before B's launch until the writer stopped).
        var writes = LiveWriter.Tally()
        /// A's events at B's launch.
        var sourceEventsAtLaunch = 0
        /// From stopping the writer until `peerd wait`'s readiness with equal, stable state hashes.
        var finalSeconds = 0.0
        var finalStateHash = ""
        var finalItems = 0
        var receiverPeakMiB = Double.nan
        var sourcePeakMiB = Double.nan
        var receiverDatabase: (main: Int64, wal: Int64) = (0, 0)
        var sourceDatabase: (main: Int64, wal: Int64) = (0, 0)

        init(mode: Mode, writesPerSecond: Int) {
            self.mode = mode
            self.writesPerSecond = writesPerSecond
        }
    }

    func run() async throws -> Result {
        var result = Result(mode: mode, writesPerSecond: writesPerSecond)
        let data = try await site.join(name, code: code)
        var writer: LiveWriter?
        defer { _ = try? writer?.stop() }
        if writesPerSecond > 0 {
            progress("bootstrap: live writes to A, \(writesPerSecond)/s ...")
            writer = LiveWriter(api: source.api, itemIDs: itemIDs, perSecond: writesPerSecond, label: name)
            try await Task.sleep(for: .milliseconds(500))
        } else {
            // A quiet source: its last anti-entropy round has hashed its state.
            try await Task.sleep(for: .milliseconds(2_500))
        }
        result.sourceEventsAtLaunch = try source.api.status().eventCount

        progress("bootstrap: \(name) starts (\(mode.rawValue), A taking \(writesPerSecond) writes/s) ...")
        result.loadAtLaunch = ShellBenchmark.loadAverage
        let launchDate = Date()
        let launch = ContinuousClock.now
        let receiver = try await site.startFresh(
            name, data: data, extra: mode == .replay ? ["--start-from", "replay"] : [])
        result.launchedSeconds = (ContinuousClock.now - launch).seconds
        try waitUntilReady(receiver, since: launch, into: &result)
        progress(
            "bootstrap: \(name): same state as A and /items complete after \(Self.text(result.readySeconds)); "
                + "`peerd wait` readiness after \(Self.text(result.waitReadySeconds))")

        if let running = writer {
            result.writes = try running.stop()
            writer = nil
        }
        try waitForFinalState(receiver, into: &result)
        result.receivedAtEnd = try? receiver.api.metric("peersync_bytes_received_total")
        result.receiverPeakMiB = receiver.peakMiB
        result.sourcePeakMiB = source.peakMiB
        let lines = receiver.logLines
        if result.started == nil { result.started = lines.records(.checkpointStarted).first }
        func logged(_ record: LogRecord?) -> Double? { record?.loggedAt.map { $0.timeIntervalSince(launchDate) } }
        result.listeningLogged = logged(lines.records(.listening).first)
        result.identifiedLogged = logged(lines.records(.peerIdentified).first)
        result.startedLogged = logged(result.started)
        try await site.stop(receiver)
        result.receiverDatabase = receiver.databaseBytes
        result.sourceDatabase = source.databaseBytes
        try checkStoredState(of: receiver, against: result.finalStateHash)
        return result
    }

    private static func text(_ seconds: Double?) -> String {
        seconds.map { String(format: "%.3f s", $0) } ?? "never"
    }

    /// Polls B's `/status` every ``pollInterval``; whenever B misses no
    /// event, reads `/status` of B and of A at the same instant (two threads;
    /// each daemon reads its state as the request begins), and on the same
    /// state hash both `/items` likewise; until B shows A's state with
    /// `/items` complete and, within ``inSyncGraceSeconds`` after that,
    /// `peerd wait`'s readiness too. A's `/status` is read only then (and
    /// after the same state, only once B's own `/status` shows `peerd
    /// wait`'s condition): under writes every read of it hashes A's whole
    /// state again.
    private func waitUntilReady(
        _ receiver: BootstrapDaemon, since launch: ContinuousClock.Instant, into result: inout Result
    ) throws {
        var next = ContinuousClock.now
        var lastReport = ContinuousClock.now
        var interval = Self.pollInterval
        let sourceAPI = source.api
        while true {
            try source.checkRunning()
            try receiver.checkRunning()
            let elapsed = (ContinuousClock.now - launch).seconds
            if let ready = result.readySeconds,
                result.waitReadySeconds != nil || elapsed > ready + Self.inSyncGraceSeconds
            {
                break
            }
            guard elapsed < deadlineSeconds else {
                throw BenchmarkFailure(
                    description: "\(receiver.name) did not show A's state \(Int(deadlineSeconds)) s after its "
                        + "launch; its log ends:\n" + receiver.logLines.suffix(8).joined(separator: "\n"))
            }
            let asked = ContinuousClock.now
            if let fresh = try? receiver.api.status(seconds: 5) {
                let answered = ContinuousClock.now
                result.receiverStatus.append(answered - asked)
                let at = (answered - launch).seconds
                if result.firstAnswerSeconds == nil { result.firstAnswerSeconds = at }
                if fresh.checkpoint != nil && result.checkpointShownSeconds == nil {
                    result.checkpointShownSeconds = at
                }
                if fresh.peersInSync >= 1 && result.firstInSyncSeconds == nil { result.firstInSyncSeconds = at }
                if mode == .checkpoint && result.started == nil,
                    let started = receiver.logLines.records(.checkpointStarted).first
                {
                    result.started = started
                    result.startedLoggedSeconds = (ContinuousClock.now - launch).seconds
                }
                if ContinuousClock.now - lastReport > .seconds(10) {
                    lastReport = ContinuousClock.now
                    progress(
                        String(
                            format: "bootstrap: %.0f s, %@ holds %@ events, %@ missing, %d peers in sync", at,
                            receiver.name, Report.grouped(Double(fresh.eventCount)),
                            Report.grouped(Double(fresh.eventsMissing)), fresh.peersInSync))
                }
                interval = fresh.eventsMissing > Self.coarseMissing ? Self.coarseInterval : Self.pollInterval
                let counting = result.readySeconds == nil && (fresh.checkpoint != nil || mode == .replay)
                if counting && fresh.eventsMissing != 0 { result.missingRounds += 1 }
                // A's `/status` is read only once B has started: before, it would only cost A a hash.
                // Once B showed A's state, A is read again only when B's own `/status` says what `peerd wait`
                // waits for: every read of A under writes hashes its state anew, on the CPU B needs.
                let holds = fresh.checkpoint != nil || fresh.eventCount > 0
                let asks = result.readySeconds == nil || fresh.isConverged
                if holds && asks && fresh.eventsMissing == 0 && fresh.peersConnected >= 1 {
                    try compare(receiver, sourceAPI, since: launch, counting: counting, into: &result)
                }
            }
            next += interval
            let now = ContinuousClock.now
            if next > now { Thread.sleep(forTimeInterval: (next - now).seconds) } else { next = now }
        }
    }

    /// `/status` of B and of A at the same instant; on the same state hash,
    /// both `/items` at the same instant: ready when they list as many items.
    private func compare(
        _ receiver: BootstrapDaemon, _ sourceAPI: ReplicaAPI, since launch: ContinuousClock.Instant, counting: Bool,
        into result: inout Result
    ) throws {
        let asked = ContinuousClock.now
        let (heldOutcome, freshOutcome) = Self.atOnce(
            { try sourceAPI.status(seconds: 5) }, { try receiver.api.status(seconds: 5) })
        guard case .success(let held) = heldOutcome, case .success(let fresh) = freshOutcome else { return }
        result.sourceStatus.append(ContinuousClock.now - asked)
        if fresh.peersInSync >= 1 && result.firstInSyncSeconds == nil {
            result.firstInSyncSeconds = (ContinuousClock.now - launch).seconds
        }
        guard fresh.eventsMissing == 0 && fresh.peersConnected >= 1 else { return }
        guard fresh.stateHash == held.stateHash else {
            if counting { result.hashMisses += 1 }
            return
        }
        let waitWouldReturn = fresh.isConverged
        guard result.readySeconds == nil || (waitWouldReturn && result.waitReadySeconds == nil) else { return }
        let sameState = (ContinuousClock.now - launch).seconds
        // B's list, read on this thread, is in hand when its read returns; A's is only the reference.
        let listAsked = ContinuousClock.now
        var listed = listAsked
        let (sourceItems, items) = Self.atOnce(
            { try sourceAPI.itemCount() },
            {
                defer { listed = ContinuousClock.now }
                return try receiver.api.itemCount()
            })
        result.receiverItems.append(listed - listAsked)
        guard case .success(let count) = items, case .success(let sourceCount) = sourceItems, count == sourceCount
        else {
            result.itemMisses += 1
            return
        }
        let done = (listed - launch).seconds
        if result.readySeconds == nil {
            result.sameStateSeconds = sameState
            result.readySeconds = done
            result.items = count
            result.eventsHeld = fresh.eventCount
            result.sourceEvents = held.eventCount
            result.historyHeld = fresh.historyHeld
            result.receivedAtReady = try? receiver.api.metric("peersync_bytes_received_total")
        }
        if waitWouldReturn { result.waitReadySeconds = done }
    }

    /// Runs `first` on a thread of its own while `second` runs on this one, both started at once.
    private static func atOnce<T: Sendable>(_ first: @escaping @Sendable () throws -> T, _ second: () throws -> T)
        -> (Swift.Result<T, any Error>, Swift.Result<T, any Error>)
    {
        let other = BackgroundWork("bootstrap poll") { Swift.Result { try first() } }
        let here = Swift.Result { try second() }
        let there = other.wait(seconds: 60) ?? .failure(BenchmarkFailure(description: "no answer within 60 s"))
        return (there, here)
    }

    /// With the writer stopped: polls until `peerd wait`'s readiness holds
    /// on a state hash A showed over two rounds, with equal item counts.
    private func waitForFinalState(_ receiver: BootstrapDaemon, into result: inout Result) throws {
        let start = ContinuousClock.now
        var previous: String?
        while true {
            try source.checkRunning()
            try receiver.checkRunning()
            guard (ContinuousClock.now - start).seconds < 120 else {
                let a = try? source.api.status()
                let b = try? receiver.api.status()
                throw BenchmarkFailure(
                    description: "\(receiver.name) and A did not end with the same state within 120 s of the writer "
                        + "stopping: A \(a?.stateHash.prefix(16) ?? "?") (\(a?.eventCount ?? -1) events), "
                        + "\(receiver.name) \(b?.stateHash.prefix(16) ?? "?") (\(b?.eventCount ?? -1) events, "
                        + "\(b?.eventsMissing ?? -1) missing, \(b?.peersInSync ?? -1) peers in sync)")
            }
            if let held = try? source.api.status(), let fresh = try? receiver.api.status() {
                if held.stateHash == previous && fresh.isConverged && fresh.stateHash == held.stateHash {
                    let items = try receiver.api.itemCount()
                    let sourceItems = try source.api.itemCount()
                    guard items == sourceItems else {
                        throw BenchmarkFailure(
                            description: "\(receiver.name) lists \(items) items and A \(sourceItems) at the same "
                                + "state hash \(held.stateHash.prefix(16))")
                    }
                    result.finalSeconds = (ContinuousClock.now - start).seconds
                    result.finalStateHash = held.stateHash
                    result.finalItems = items
                    return
                }
                previous = held.stateHash
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
    }

    /// B's stored log, opened in process once B stopped, must fold to A's final state hash.
    private func checkStoredState(of receiver: BootstrapDaemon, against hash: String) throws {
        let log = try EventLog.open(at: (receiver.data as NSString).appendingPathComponent("replica.db"))
        let stored = try log.stateHash()
        guard stored == hash else {
            throw BenchmarkFailure(
                description: "\(receiver.name)'s replica.db folds to state hash \(stored.prefix(16)), "
                    + "A's /status says \(hash.prefix(16)): the states differ")
        }
    }
}
