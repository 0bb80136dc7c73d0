import ChildProcesses
import Foundation
import Gossip
import PeerNet
import Replica
import SyncProtocol
import Synchronization

/// Three in-process `GossipService`s A, B, C on 127.0.0.1, each with its
/// own log (durability FULL) in one cluster: B dials A, C dials A and B.
final class SyncMesh {
    /// The anti-entropy interval of the live measurement: the default, as a
    /// user runs it.
    static let liveIntervalMs: Milliseconds = SyncNode.Configuration(hello: Hello(replicaID: "-", listenPort: 0))
        .antiEntropyIntervalMs
    /// The anti-entropy interval of the idle measurement: short, so that it
    /// sees many rounds in seconds.
    static let idleIntervalMs: Milliseconds = 100

    let names = ["A", "B", "C"]
    let services: [GossipService]
    /// When B (index 0) and C (index 1) stored each event.
    let arrivals = ArrivalBoard()
    private let paths: [String]
    private let workspace: Workspace
    private var stopped = false

    /// Every node's anti-entropy interval.
    let antiEntropyIntervalMs: Milliseconds

    /// - Parameters.
    init(
        workspace: Workspace, antiEntropyIntervalMs: Milliseconds, pruning: Bool = true,
        durability: EventLog.Options.Durability = .full
    ) throws {
        self.antiEntropyIntervalMs = antiEntropyIntervalMs
        self.workspace = workspace
        let key = ClusterKey.generate()
        var services: [GossipService] = []
        var paths: [String] = []
        var ports: [UInt16] = []
        for name in names {
            let path = workspace.freshDatabase("sync-mesh-\(name).db")
            _ = try EventLog.create(at: path, replicaID: "bench-\(name.lowercased())")
            var options = EventLog.Options()
            options.durability = durability
            let storage = try StorageExecutor(path: path, options: options)
            var configuration = GossipService.Configuration(replicaID: storage.replicaID)
            configuration.listenHost = "127.0.0.1"
            configuration.listenPort = 0
            configuration.node.antiEntropyIntervalMs = antiEntropyIntervalMs
            configuration.node.session.prunesLinks = pruning
            configuration.peers = ports.map { PeerAddress(host: "127.0.0.1", port: $0) }
            let service = try GossipService(
                storage: storage, clusterKey: key, configuration: configuration,
                logger: { record in
                    if record.level >= .warning { progress("mesh \(name): \(record.line)") }
                })
            ports.append(try service.start())
            services.append(service)
            paths.append(path)
        }
        self.services = services
        self.paths = paths
        for (index, service) in services.enumerated().dropFirst() {
            let board = arrivals
            service.storage.observe { change in
                if !change.stored.isEmpty { board.record(change.stored, receiver: index - 1) }
            }
        }
    }

    deinit { stop() }

    /// `body` with a connected mesh, stopped after it.
    static func measuring<T>(
        _ what: String, workspace: Workspace, antiEntropyIntervalMs: Milliseconds, pruning: Bool,
        durability: EventLog.Options.Durability = .full, _ body: (SyncMesh) throws -> T
    ) throws -> T {
        progress(
            "\(what) mesh: A, B, C in process, anti-entropy every \(antiEntropyIntervalMs) ms, "
                + "synchronous=\(durability.rawValue) ...")
        let mesh = try SyncMesh(
            workspace: workspace, antiEntropyIntervalMs: antiEntropyIntervalMs, pruning: pruning,
            durability: durability)
        defer { mesh.stop() }
        try mesh.waitUntilConnected()
        return try body(mesh)
    }

    /// Waits until every node has both other nodes identified on a connection.
    func waitUntilConnected() throws {
        try waitUntil("the mesh to connect", seconds: 20) {
            services.allSatisfy { service in
                Set(service.connectionSnapshots().compactMap { $0.peer?.replicaID }).count == 2
            }
        }
    }

    /// Waits until all three logs hold the same events.
    func waitUntilConverged() throws {
        try waitUntil("the mesh to converge", seconds: 20) {
            let cursors = services.map { service in service.storage.cursor() }
            return cursors.allSatisfy { $0 == cursors[0] }
        }
    }

    /// Stops the services and removes their databases.
    func stop() {
        guard !stopped else { return }
        stopped = true
        for service in services {
            service.stop(reason: "benchmark done")
            service.storage.close()
        }
        for path in paths { workspace.remove(path) }
    }
}

/// Arrival times of events at the receivers, written by `onStored` on the
/// services' queues and awaited by the benchmark's thread.
final class ArrivalBoard: Sendable {
    private let times = Mutex<[UUID: [UInt64?]]>([:])
    private let signal = DispatchSemaphore(value: 0)
    /// How many receivers each event is awaited at.
    static let receivers = 2

    /// Notes that `receiver` stored `events` now.
    func record(_ events: [StoredEvent], receiver: Int) {
        let now = monotonicNanoseconds()
        times.withLock { times in
            for stored in events {
                times[stored.event.eventID, default: Array(repeating: nil, count: ArrivalBoard.receivers)][receiver] =
                    now
            }
        }
        signal.signal()
    }

    /// Waits until every receiver stored `eventID`; returns when each did (monotonic ns).
    func waitForAll(_ eventID: UUID, seconds: Double) throws -> [UInt64] {
        let deadline = DispatchTime.now() + seconds
        while true {
            let arrived: [UInt64]? = times.withLock { times in
                guard let entry = times[eventID] else { return nil }
                let all = entry.compactMap { $0 }
                guard all.count == entry.count else { return nil }
                times[eventID] = nil
                return all
            }
            if let arrived { return arrived }
            if signal.wait(timeout: deadline) == .timedOut {
                throw TimedOut(what: "event \(eventID) to reach B and C", timeout: .seconds(seconds), details: "")
            }
        }
    }
}

/// Live propagation: single appends on A, one at a time, each timed from
/// just before `GossipService.append` to the `onStored` callback on B and
/// on C (the event stored and folded there, durably); the next append
/// follows as soon as both have it.
struct SyncLatencyBenchmark {
    let samples: Int
    let mesh: SyncMesh

    func run() throws -> LiveLatencyResult {
        progress("live latency: \(samples) single appends on A, timed to B and C ...")
        let source = mesh.services[0]
        var workload = ItemWorkload(eventCount: samples, maxItems: 20_000, distribution: .recentHot)
        var toB: [Duration] = []
        var toC: [Duration] = []
        var appends: [Duration] = []
        while let change = workload.next() {
            let new = NewEvent(item: change.entityID, change.event)
            let start = monotonicNanoseconds()
            let stored = try source.append(new)
            let appended = monotonicNanoseconds()
            let arrived = try mesh.arrivals.waitForAll(stored.event.eventID, seconds: 10)
            appends.append(.nanoseconds(Int64(appended - start)))
            toB.append(.nanoseconds(Int64(arrived[0] - start)))
            toC.append(.nanoseconds(Int64(arrived[1] - start)))
        }
        try mesh.waitUntilConverged()
        let statistics = mesh.services.dropFirst().map { service in service.statistics() }
        return LiveLatencyResult(
            toB: LatencySummary(toB), toC: LatencySummary(toC), append: LatencySummary(appends),
            receivers: statistics)
    }
}

/// Live propagation latencies in the mesh.
struct LiveLatencyResult {
    /// From just before `append` on A to the `onStored` callback on B (B dialed A).
    var toB: LatencySummary
    /// The same to C (C dialed A and B).
    var toC: LatencySummary
    /// The `append` call on A itself: the durable local commit and the push queued.
    var append: LatencySummary
    /// B's and C's sync counters after the phase: events received, and of those stored (the rest were duplicates).
    var receivers: [SyncStatistics]
}
