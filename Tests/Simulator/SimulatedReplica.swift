import Foundation
import Gossip
import Replica
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
    private(set) var node: SyncNode?

    init(index: Int, directory: String, skewMs: Milliseconds) {
        self.index = index
        replicaID = "sim-\(index)"
        address = PeerAddress(host: "sim-\(index)", port: 1)
        path = "\(directory)/sim-\(index).sqlite"
        self.skewMs = skewMs
    }

    var host: Host { Host(replica: index, incarnation: incarnation) }

    /// True while the device runs as `host` (not crashed, not restarted since).
    func runs(as host: Host) -> Bool { node != nil && self.host == host }

    var isUp: Bool { node != nil }

    /// Starts the device: creates its log on the first start, opens it after.
    func start(
        clock: VirtualClock, configuration: SyncNode.Configuration, logger: @escaping (LogRecord) -> Void
    ) throws {
        precondition(node == nil, "\(replicaID) started twice")
        var options = EventLog.Options()
        options.durability = .normal
        options.wallClock = clock.wallClock(skewMs: skewMs)
        let log =
            FileManager.default.fileExists(atPath: path)
            ? try EventLog.open(at: path, options: options)
            : try EventLog.create(at: path, replicaID: replicaID, options: options)
        incarnation += 1
        self.log = log
        node = try SyncNode(log: log, configuration: configuration, logger: logger)
    }

    /// The process dies: the node and the log handle go, no goodbye is sent.
    func crash() {
        node = nil
        log = nil
    }

    /// Opens the file for a check while the device is down, without a node.
    func openForInspection(clock: VirtualClock) throws -> EventLog {
        if let log { return log }
        var options = EventLog.Options()
        options.durability = .normal
        options.wallClock = clock.wallClock(skewMs: skewMs)
        return try EventLog.open(at: path, options: options)
    }
}

/// Collects what the nodes log: counts per level, the forks reported, and
/// the latest lines for a failure's diagnostic; prints them when tracing.
final class LogCollector {
    private(set) var forkReports: [String] = []
    private(set) var warnings = 0
    private(set) var clockFarAheadReports = 0
    private(set) var errors = 0
    private(set) var recent: [String] = []
    let trace: Bool
    private let clock: VirtualClock

    init(clock: VirtualClock, trace: Bool) {
        self.clock = clock
        self.trace = trace
    }

    /// The logger for one replica's node.
    func logger(for replicaID: String) -> (LogRecord) -> Void {
        { [self] record in collect(record, from: replicaID) }
    }

    /// A line from the simulator itself (faults, dials), kept like a node's.
    func note(_ text: String) {
        append("t=\(clock.now) sim \(text)")
    }

    private func collect(_ record: LogRecord, from replicaID: String) {
        if record.message == "fork quarantined" { forkReports.append("\(replicaID): \(record.line)") }
        if record.message == "clock far ahead" { clockFarAheadReports += 1 }
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
