import Foundation
import Gossip
import PeerNet
import Replica
import SyncProtocol
import Synchronization
import TestSupport

/// A wall clock that moves only when a test moves it.
final class TestWallClock: Sendable {
    private let nowMs: Mutex<Int64>

    init(_ startMs: Int64 = 1_700_000_000_000) {
        nowMs = Mutex(startMs)
    }

    var now: Int64 { nowMs.withLock { $0 } }

    func advance(by ms: Int64) {
        nowMs.withLock { $0 += ms }
    }
}

/// Real `SyncNode`s over SQLite files in a temporary directory, joined by
/// in-memory links: messages go one at a time in the order they were sent,
/// and every delivery moves the shared `now` by `msPerMessage`.
final class NodeMesh {
    struct Member {
        let log: EventLog
        let node: SyncNode
        let wallClock: TestWallClock
    }

    /// One message on its way: to whom, on which of its connections.
    private struct Delivery {
        var to: String
        var connection: ConnectionID
        var message: Message
    }

    let directory: TemporaryDirectory
    private(set) var members: [String: Member] = [:]
    /// Per node, every message it sent, in order.
    private(set) var sent: [String: [Message]] = [:]
    /// Per node, every log record it emitted.
    private(set) var logs: [String: [LogRecord]] = [:]
    private var links: [(String, String)] = []
    private var queue: [Delivery] = []
    var now: Milliseconds = 0
    var msPerMessage: Milliseconds = 0
    /// Hands a node every message queued in a row for the same connection
    /// at once, as the TCP shell does while the node is busy storing.
    var deliversRuns = false
    /// The most messages handed over in one call so far.
    private(set) var longestRun = 0

    init(
        _ names: [String], configure: (inout SyncNode.Configuration) -> Void = { _ in }
    ) throws {
        directory = try TemporaryDirectory()
        for name in names {
            let clock = TestWallClock()
            var options = EventLog.Options()
            options.durability = .normal
            options.wallClock = { clock.now }
            let log = try EventLog.create(at: directory.path("\(name).db"), replicaID: name, options: options)
            var configuration = SyncNode.Configuration(hello: Hello(replicaID: name, listenPort: 4100))
            configure(&configuration)
            let node = try SyncNode(log: log, configuration: configuration) { [unowned self] record in
                logs[name, default: []].append(record)
            }
            members[name] = Member(log: log, node: node, wallClock: clock)
        }
    }

    subscript(name: String) -> Member { members[name]! }

    /// Opens a connection from `dialer` to `acceptor` (both ends see it at
    /// once) and delivers until nothing is in flight.
    func connect(_ dialer: String, _ acceptor: String) {
        connect([(dialer, acceptor)])
    }

    /// Opens every connection first, then delivers, so that the sessions'
    /// messages interleave.
    func connect(_ pairs: [(dialer: String, acceptor: String)]) {
        for (dialer, acceptor) in pairs {
            links.append((dialer, acceptor))
            let id = ConnectionID(links.count)
            let address = PeerAddress(host: acceptor, port: 4100)
            self[dialer].node.addPeer(address, source: .configured, replicaID: acceptor, now: now)
            enqueue(self[dialer].node.connectionOpened(id, dialed: address, now: now), from: dialer)
            enqueue(self[acceptor].node.connectionOpened(id, dialed: nil, now: now), from: acceptor)
        }
        deliverAll()
    }

    /// Every node's timer at `now`, then every delivery that follows.
    func tick() {
        for name in members.keys.sorted() { enqueue(self[name].node.tick(now: now), from: name) }
        deliverAll()
    }

    /// Appends local events on `name` and lets its node push them.
    func append(_ count: Int, on name: String) throws {
        for index in 0..<count {
            try self[name].log.append(NewEvent(item: "\(name)-\(index)", .created(name: "x", quantity: 1)))
        }
        enqueue(self[name].node.localChanged(now: now), from: name)
        deliverAll()
    }

    /// Stores events as if `name` had them from elsewhere, and tells its node.
    func ingest(_ events: [Event], on name: String) throws {
        try self[name].log.ingest(events)
        enqueue(self[name].node.localChanged(now: now), from: name)
        deliverAll()
    }

    /// The `state` messages `name` sent so far.
    func statesSent(by name: String) -> [StateSummary] {
        (sent[name] ?? []).compactMap { message in
            if case .state(let summary) = message { return summary }
            return nil
        }
    }

    func records(_ message: String, of name: String) -> [LogRecord] {
        (logs[name] ?? []).filter { $0.message == message }
    }

    private func enqueue(_ effects: [SyncNode.Effect], from name: String) {
        for case .send(let id, let message) in effects {
            sent[name, default: []].append(message)
            let (dialer, acceptor) = links[Int(id) - 1]
            queue.append(Delivery(to: name == dialer ? acceptor : dialer, connection: id, message: message))
        }
    }

    private func deliverAll() {
        while !queue.isEmpty {
            let delivery = queue.removeFirst()
            var run = [delivery.message]
            while deliversRuns, let next = queue.first, next.to == delivery.to, next.connection == delivery.connection {
                run.append(queue.removeFirst().message)
            }
            longestRun = max(longestRun, run.count)
            now += msPerMessage
            let effects =
                run.count == 1
                ? self[delivery.to].node.received(delivery.message, on: delivery.connection, now: now)
                : self[delivery.to].node.received(run, on: delivery.connection, now: now)
            enqueue(effects, from: delivery.to)
        }
    }
}
