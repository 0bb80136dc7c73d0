import Foundation
import Gossip
import PeerNet
import Replica
import SyncProtocol
import Synchronization

/// Virtual time in milliseconds, shared by the simulator (which moves it)
/// and every replica's `EventLog.Options.wallClock` (which reads it).
public final class VirtualClock: Sendable {
    /// Wall-clock time at virtual time 0 (November 2023), so that skews
    /// hours behind still give plausible times.
    public static let epochMs: Int64 = 1_700_000_000_000

    private let current = Atomic<Int64>(0)

    public init() {}

    public var now: Milliseconds { current.load(ordering: .relaxed) }

    func advance(to time: Milliseconds) {
        current.store(time, ordering: .relaxed)
    }

    /// The wall clock of a device `skewMs` off true time.
    public func wallClock(skewMs: Int64) -> @Sendable () -> Int64 {
        { [self] in VirtualClock.epochMs + now + skewMs }
    }
}

/// One simulated device: a real `EventLog` in its own SQLite file, and a
/// `SyncNode` over it while the device runs. A crash drops both without a
/// goodbye; a restart opens the same file again.
final class SimulatedReplica {
    let index: Int
    let replicaID: String
    let address: PeerAddress
    let path: String
    let skewMs: Milliseconds
    private(set) var incarnation = 0
    private(set) var log: EventLog?
    /// The node while the device runs; the simulator changes it in place.
    var node: SyncNode?

    init(index: Int, directory: String, skewMs: Milliseconds) {
        self.index = index
        replicaID = "sim-\(index)"
        address = PeerAddress(host: "sim-\(index)", port: 1)
        path = "\(directory)/sim-\(index).sqlite"
        self.skewMs = skewMs
    }

    var host: Host { Host(replica: index, incarnation: incarnation) }

    /// The device's identity key, the same on every run of a seed: 32 bytes of the index's SplitMix64 stream.
    var identityKey: SigningKey {
        var random = SplitMix64(seed: 0x51_6E_0000 + UInt64(index))
        let seed = (0..<4).flatMap { _ in withUnsafeBytes(of: random.next()) { Array($0) } }
        return try! SigningKey(seed: seed)  // 32 bytes: always a key
    }

    /// True while the device runs as `host` (not crashed, not restarted since).
    func runs(as host: Host) -> Bool { node != nil && self.host == host }

    var isUp: Bool { node != nil }

    /// Starts the device: creates its log on the first start, opens it after.
    func start(
        clock: VirtualClock, configuration: SyncNode.Configuration, logger: @escaping @Sendable (LogRecord) -> Void
    ) throws {
        precondition(node == nil, "\(replicaID) started twice")
        var options = Self.options(clock: clock, skewMs: skewMs)
        options.eventIDs = SeededEventIDs(replicaID: replicaID, incarnation: incarnation + 1).next
        if let identity = configuration.identity { options.feedSigner = FeedSigner(identity.key) }
        let log =
            FileManager.default.fileExists(atPath: path)
            ? try EventLog.open(at: path, options: options)
            : try EventLog.create(at: path, replicaID: replicaID, options: options)
        incarnation += 1
        self.log = log
        // What the file keeps of earlier runs, as `GossipService` starts its node with.
        var configuration = configuration
        let kept = try SyncNode.Kept(log: log)
        configuration.certificates = []
        configuration.forkProofs = []
        kept.configure(&configuration)
        node = SyncNode(configuration: configuration, cursor: try log.cursor(), logger: logger)
    }

    /// The process dies: the node and the log handle go, no goodbye is sent.
    func crash() {
        node = nil
        log = nil
    }

    /// Opens the file for a check while the device is down, without a node.
    func openForInspection(clock: VirtualClock) throws -> EventLog {
        if let log { return log }
        return try EventLog.open(at: path, options: Self.options(clock: clock, skewMs: skewMs))
    }

    /// A simulated device's log: durable against a process crash only, on
    /// the virtual clock, and small in memory, since a run may hold a
    /// thousand logs in `/dev/shm` at once: a WAL checkpointed at 512
    /// pages (2 MiB, not the daemon's 40 MiB) and a 1 MiB page cache.
    static func options(clock: VirtualClock, skewMs: Milliseconds) -> EventLog.Options {
        var options = EventLog.Options()
        options.durability = .normal
        options.wallClock = clock.wallClock(skewMs: skewMs)
        options.walAutocheckpointPages = 512
        options.pageCacheKiB = 1_024
        return options
    }
}

/// Collects what the nodes log: counts per level, the forks reported, and
/// the latest lines for a failure's diagnostic; prints them when tracing.
///
/// `@unchecked Sendable` so that nodes may hold its logger: a simulation
/// runs on one thread, and every call comes from it.
final class LogCollector: @unchecked Sendable {
    private(set) var forkReports: [String] = []
    /// Events refused for their signature, and feeds proven forked: none in an honest run.
    private(set) var verificationReports: [String] = []
    private(set) var warnings = 0
    private(set) var clockFarAheadReports = 0
    private(set) var errors = 0
    /// Per replica: the checkpoint (hex id) it started from, as its
    /// `checkpoint.started` line says.
    private(set) var checkpointStarts: [String: String] = [:]
    /// `checkpoint.rebased` lines: the replica, and the checkpoint it moved onto.
    private(set) var rebases: [(replica: String, checkpoint: String)] = []
    /// `checkpoint.history_dropped` lines: the replica, and the events dropped.
    private(set) var historyDrops: [(replica: String, events: Int)] = []
    /// `checkpoint.refused`, `checkpoint.start_failed` and
    /// `checkpoint.rebase_failed` lines: none in an honest run.
    private(set) var checkpointRefusals: [String] = []
    /// `storage.failed` lines that call the file damaged: the simulator damages none.
    private(set) var damageReports: [String] = []
    private(set) var recent: [String] = []
    let trace: Bool
    private let clock: VirtualClock

    init(clock: VirtualClock, trace: Bool) {
        self.clock = clock
        self.trace = trace
    }

    /// The logger for one replica's node.
    func logger(for replicaID: String) -> @Sendable (LogRecord) -> Void {
        { [self] record in collect(record, from: replicaID) }
    }

    /// A line from the simulator itself (faults, dials), kept like a node's.
    func note(_ text: String) {
        append("t=\(clock.now) sim \(text)")
    }

    private func collect(_ record: LogRecord, from replicaID: String) {
        if record.event == .forkDetected { forkReports.append("\(replicaID): \(record.line)") }
        if (record.event == .eventsRefused && record["cause"] == "unverifiable") || record.event == .feedQuarantined {
            verificationReports.append("\(replicaID): \(record.line)")
        }
        if record.event == .clockAhead { clockFarAheadReports += 1 }
        switch record.event {
        case .checkpointStarted: checkpointStarts[replicaID] = record["checkpoint"]
        case .historyDropped: historyDrops.append((replicaID, record["events"].flatMap { Int($0) } ?? 0))
        case .checkpointRebased: rebases.append((replicaID, record["checkpoint"] ?? ""))
        case .checkpointRefused, .checkpointStartFailed, .checkpointRebaseFailed:
            checkpointRefusals.append("\(replicaID): \(record.line)")
        case .storageFailed where record["error"]?.contains("damaged") ?? false:
            damageReports.append("\(replicaID): \(record.line)")
        default: break
        }
        if record.level == .warning { warnings += 1 }
        if record.level == .error { errors += 1 }
        guard record.level >= .info || trace else { return }
        append("t=\(clock.now) \(replicaID) \(record.line)")
    }

    private func append(_ line: String) {
        if trace { print(line) }
        recent.append(line)
        if recent.count > 400 { recent.removeFirst(200) }
    }
}

/// Event ids that depend only on the replica, its incarnation and a counter,
/// so that a seed replays exactly (ties in `(time_ms, seq)` are broken by
/// event id in the canonical order).
final class SeededEventIDs: Sendable {
    private let counter = Mutex<UInt64>(0)
    private let base: UInt64

    init(replicaID: String, incarnation: Int) {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in replicaID.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        base = hash ^ (UInt64(incarnation) &* 0x9E37_79B9_7F4A_7C15)
    }

    func next() -> UUID {
        let count = counter.withLock { value in
            value += 1
            return value
        }
        var random = SimulationRandom(seed: base &+ count)
        var bytes = withUnsafeBytes(of: (random.next(), random.next())) { Array($0) }
        bytes[6] = (bytes[6] & 0x0F) | 0x40
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        return UUID(uuid: bytes.withUnsafeBytes { $0.loadUnaligned(as: uuid_t.self) })
    }
}
