import Foundation
import Gossip
import PeerNet
import Replica
import SyncProtocol
import Synchronization
import TestSupport

/// Every log record a node emitted, collected from the node's `Sendable` logger.
final class LogRecords: Sendable {
    private let records = Mutex<[LogRecord]>([])

    func append(_ record: LogRecord) { records.withLock { $0.append(record) } }
    var all: [LogRecord] { records.withLock { $0 } }
}

/// Real `SyncNode`s over SQLite files in a temporary directory, joined by
/// in-memory links: messages go one at a time in the order they were sent,
/// every delivery moves the shared `now` by `msPerMessage`, and storage
/// work is done at once (`DirectStorage`).
final class NodeMesh {
    final class Member {
        let log: EventLog
        var node: SyncNode
        let wallClock: ManualClock

        init(log: EventLog, node: SyncNode, wallClock: ManualClock) {
            self.log = log
            self.node = node
            self.wallClock = wallClock
        }

        /// Gives the node an input; its storage work is done at once, and
        /// the network effects are returned.
        func input(_ body: (inout SyncNode) -> [SyncNode.Effect], now: Milliseconds) -> [SyncNode.Effect] {
            let effects = body(&node)
            return DirectStorage.carryOut(effects, node: &node, log: log, now: now)
        }
    }

    /// One message on its way: to whom, on which of its connections.
    private struct Delivery {
        var to: String
        var connection: ConnectionID
        var message: Message
    }

    let directory: TemporaryDirectory
    private(set) var members: [String: Member] = [:]
    private var records: [String: LogRecords] = [:]
    /// Per node, every message it sent, in order.
    private(set) var sent: [String: [Message]] = [:]
    private var links: [(String, String)] = []
    /// Connections closed (by `disconnect` or a node's `.close`).
    private var closed: Set<ConnectionID> = []
    private var queue: [Delivery] = []
    var now: Milliseconds = 0
    var msPerMessage: Milliseconds = 0
    /// Hands a node every message queued in a row for the same connection
    /// at once, as the TCP shell does while the node is busy storing.
    var deliversRuns = false
    /// The most messages handed over in one call so far.
    private(set) var longestRun = 0

    /// - Parameter signed: every node gets an identity key (`identityKey(of:)`),
    ///   signs its feeds and verifies what it takes, in an open cluster
    ///   whose wall clock is the member's.
    init(
        _ names: [String], signed: Bool = false, configure: (inout SyncNode.Configuration) -> Void = { _ in }
    ) throws {
        directory = try TemporaryDirectory()
        for name in names {
            let clock = ManualClock()
            var options = EventLog.Options()
            options.durability = .normal
            options.wallClock = { clock.now }
            if signed { options.feedSigner = FeedSigner(Self.identityKey(of: name)) }
            let log = try EventLog.create(at: directory.path("\(name).db"), replicaID: name, options: options)
            var configuration = SyncNode.Configuration(hello: Hello(replicaID: name, listenPort: 4100))
            if signed {
                configuration.identity = (Self.identityKey(of: name), nil)
                configuration.session.trust = TrustPolicy(adminKey: nil, wallClockMs: { UInt64(clock.now) })
            }
            configure(&configuration)
            let logs = LogRecords()
            let node = SyncNode(configuration: configuration, cursor: try log.cursor()) { logs.append($0) }
            let member = Member(log: log, node: node, wallClock: clock)
            records[name] = logs
            members[name] = member
        }
    }

    subscript(name: String) -> Member { members[name]! }

    /// The identity key of node `name` in a signed mesh: seeded from its name.
    static func identityKey(of name: String) -> SigningKey {
        var hash = SHA256()
        hash.update(name)
        return try! SigningKey(seed: hash.finalize())
    }

    /// In a signed mesh: `name` makes a checkpoint of its log, signs it as
    /// its maker, takes it and tells its node, as `peerd checkpoint make`
    /// beside a running daemon does; what follows is delivered.
    @discardableResult
    func makeCheckpoint(on name: String) throws -> SignedCheckpoint {
        let log = self[name].log
        let signed = SignedCheckpoint.sign(try log.makeCheckpoint(), by: Self.identityKey(of: name), as: .maker)
        _ = try log.take(signed.content, statement: signed.bytes)
        input(name) { $0.checkpointGiven(signed, now: 0) }
        return signed
    }

    /// Gives `name`'s node an input and delivers what follows.
    func input(_ name: String, _ body: (inout SyncNode) -> [SyncNode.Effect]) {
        enqueue(self[name].input(body, now: now), from: name)
        deliverAll()
    }

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
            let now = now
            enqueue(self[dialer].input({ $0.connectionOpened(id, dialed: address, now: now) }, now: now), from: dialer)
            enqueue(self[acceptor].input({ $0.connectionOpened(id, dialed: nil, now: now) }, now: now), from: acceptor)
        }
        deliverAll()
    }

    /// Closes the newest connection between `dialer` and `acceptor` at both
    /// ends; what was still on its way is lost with it.
    func disconnect(_ dialer: String, _ acceptor: String) {
        guard let index = links.lastIndex(where: { $0 == (dialer, acceptor) }) else { return }
        close(ConnectionID(index + 1))
        deliverAll()
    }

    /// Every node's timer at `now`, then every delivery that follows.
    func tick() {
        let now = now
        for name in members.keys.sorted() { enqueue(self[name].input({ $0.tick(now: now) }, now: now), from: name) }
        deliverAll()
    }

    /// Appends local events on `name` and lets its node push them.
    func append(_ count: Int, on name: String) throws {
        for index in 0..<count {
            try self[name].log.append(NewEvent(item: "\(name)-\(index)", .created(name: "x", quantity: 1)))
        }
        try localChanged(on: name)
        deliverAll()
    }

    /// Stores events as if `name` had them from elsewhere, and tells its node.
    func ingest(_ events: [Event], on name: String) throws {
        try self[name].log.ingest(events)
        try localChanged(on: name)
        deliverAll()
    }

    /// Tells `name`'s node that its log changed (as its storage would).
    func localChanged(on name: String) throws {
        let (cursor, now) = (try self[name].log.cursor(), now)
        enqueue(self[name].input({ $0.localChanged(cursor: cursor, now: now) }, now: now), from: name)
    }

    /// The `state` messages `name` sent so far.
    func statesSent(by name: String) -> [StateSummary] {
        (sent[name] ?? []).compactMap { message in
            if case .state(let summary) = message { return summary }
            return nil
        }
    }

    func records(_ event: LogEvent, of name: String) -> [LogRecord] {
        (records[name]?.all ?? []).filter { $0.event == event }
    }

    private func enqueue(_ effects: [SyncNode.Effect], from name: String) {
        for effect in effects {
            switch effect {
            case .send(let id, let message):
                sent[name, default: []].append(message)
                let (dialer, acceptor) = links[Int(id) - 1]
                queue.append(Delivery(to: name == dialer ? acceptor : dialer, connection: id, message: message))
            case .close(let id, _):
                close(id)
            default:
                break
            }
        }
    }

    /// Closes connection `id` at both ends, as the TCP shell does for a `.close`.
    private func close(_ id: ConnectionID) {
        guard !closed.contains(id) else { return }
        closed.insert(id)
        queue.removeAll { $0.connection == id }
        let (dialer, acceptor) = links[Int(id) - 1]
        let now = now
        for name in [dialer, acceptor] {
            enqueue(
                self[name].input(
                    {
                        $0.connectionClosed(id, now: now); return []
                    }, now: now), from: name)
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
            let (now, connection) = (now, delivery.connection)
            let effects = self[delivery.to].input({ $0.received(run, on: connection, now: now) }, now: now)
            enqueue(effects, from: delivery.to)
        }
    }
}
