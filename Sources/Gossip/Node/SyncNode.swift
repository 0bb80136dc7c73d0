import PeerNet
import Replica
import SyncProtocol

/// One replica's side of sync: its peer manager and one `SyncSession` per
/// connection, carried out over its `EventLog`.
///
/// `SyncNode` does the storage work the sessions ask for (reads pages,
/// ingests batches, notices new local events) and returns `Effect`s for
/// the network: the TCP shell turns them into socket calls, the simulator
/// into in-memory deliveries. It is not thread-safe: one serial queue or
/// loop owns it.
///
/// ```swift
/// let node = SyncNode(log: log, configuration: .init(hello: Hello(replicaID: id, listenPort: 4100)))
/// node.addPeer(PeerAddress("10.0.0.2:4100")!, source: .configured, now: clock())
/// perform(node.tick(now: clock()))   // e.g. every 50 ms
/// ```
public final class SyncNode {
    public struct Configuration: Sendable {
        public var hello: Hello
        public var session = SyncSession.Configuration()
        public var peers = PeerManager.Configuration()
        /// How often each session sends its cursor changes (and so a keepalive).
        public var antiEntropyIntervalMs: Milliseconds = 1_000
        /// Seeds the peer manager's choice of peers.
        public var seed: UInt64 = 0

        public init(hello: Hello) {
            self.hello = hello
        }
    }

    /// What the network shell does.
    public enum Effect: Hashable, Sendable {
        case send(ConnectionID, Message)
        case dial(PeerAddress)
        /// Send what is queued, then close.
        case close(ConnectionID, reason: String)
    }

    public let log: EventLog
    public let configuration: Configuration
    public private(set) var manager: PeerManager
    public private(set) var sessions: [ConnectionID: SyncSession] = [:]
    /// What this replica holds, refreshed after every change.
    public private(set) var cursor: VectorCursor
    public private(set) var statistics = SyncStatistics()
    /// This replica's state summary as last computed (at most once per
    /// anti-entropy round, only after the log changed and while a session
    /// is open), with the cursor it describes; `nil` until then.
    public internal(set) var localState: StateReport?
    /// Called with the events each ingest stored (and so folded), in arrival order.
    public var onStored: (([StoredEvent]) -> Void)?
    let emit: (LogRecord) -> Void
    private var lastAntiEntropyAt: Milliseconds?
    /// Per connection: the peer's IP as the socket saw it.
    private var remoteHosts: [ConnectionID: String] = [:]
    /// Per identified connection: where its replica accepts connections.
    private var adverts: [ConnectionID: PeerAdvert] = [:]
    /// Per replica: when our cursors last agreed (or events last moved).
    private var lastInSyncAt: [String: Milliseconds] = [:]
    private(set) var lastExternalChange: Int64
    /// `lastExternalChange` when `localState` was computed.
    var localStateExternalChange: Int64?
    /// The cursor and external change counter at the last anti-entropy
    /// round, to tell a quiet log from a busy one.
    private var cursorAtLastRound: VectorCursor?
    private var externalChangeAtLastRound: Int64?
    /// Counters for `metrics()`; the gauges are filled when asked.
    var counters = SyncMetrics()
    /// Feed slots where a fork was seen, to count each once.
    var forkSlots: Set<FeedSlot> = []
    /// Per origin replica: the most its events' times were ahead of our clock.
    var clockSkewMs: [String: Int64] = [:]
    /// Per identified connection: the backlog being received.
    var catchUps: [ConnectionID: CatchUpProgress] = [:]

    public init(log: EventLog, configuration: Configuration, logger: @escaping (LogRecord) -> Void = { _ in }) throws {
        self.log = log
        self.configuration = configuration
        self.manager = PeerManager(
            replicaID: configuration.hello.replicaID, configuration: configuration.peers, seed: configuration.seed)
        self.emit = logger
        self.cursor = try log.cursor()
        self.lastExternalChange = try log.externalChangeCounter()
    }

    public func addPeer(_ address: PeerAddress, source: PeerSource, replicaID: String? = nil, now: Milliseconds) {
        manager.addPeer(address, source: source, replicaID: replicaID, now: now)
    }

    public func removePeer(_ address: PeerAddress) {
        manager.removePeer(address)
    }

    public func dialFailed(_ address: PeerAddress, reason: String, now: Milliseconds) {
        emit(LogRecord(.debug, "dial failed", [("addr", address.description), ("reason", reason)]))
        manager.dialFailed(address, reason: reason, now: now)
    }

    /// A connection finished its handshake; the session starts.
    public func connectionOpened(
        _ id: ConnectionID, dialed: PeerAddress?, remoteHost: String? = nil, now: Milliseconds
    ) -> [Effect] {
        if let remoteHost { remoteHosts[id] = remoteHost }
        let admission = manager.connected(id, dialed: dialed, now: now)
        var session = SyncSession(hello: configuration.hello, configuration: configuration.session)
        if localStateIsCurrent, let localState { session.localStateComputed(localState) }
        let directives = session.start(localCursor: cursor)
        sessions[id] = session
        return perform(directives, on: id, now: now) + carryOut(admission, now: now)
    }

    /// A message arrived on a connection.
    public func received(_ message: Message, on id: ConnectionID, now: Milliseconds) -> [Effect] {
        guard var session = sessions[id] else { return [] }
        manager.heard(id, now: now)
        let directives = session.receive(message)
        sessions[id] = session
        let effects = perform(directives, on: id, now: now)
        var delivered = 0
        if case .events(let batch) = message { delivered = batch.events.count }
        noteProgress(on: id, received: delivered, now: now)
        return effects
    }

    /// Messages that arrived on a connection, in order. A run of event
    /// batches is stored in one transaction (one commit; the projection rows
    /// wait for later, see docs/storage.md), then acknowledged batch by
    /// batch: this is what lets a catch-up go faster than one commit per
    /// batch. The result is the same as receiving them one at a time.
    public func received(_ messages: [Message], on id: ConnectionID, now: Milliseconds) -> [Effect] {
        var effects: [Effect] = []
        var run: [EventBatch] = []
        for message in messages {
            if case .events(let batch) = message {
                run.append(batch)
                continue
            }
            effects += receivedBatches(run, on: id, now: now)
            run = []
            effects += received(message, on: id, now: now)
        }
        return effects + receivedBatches(run, on: id, now: now)
    }

    private func receivedBatches(_ batches: [EventBatch], on id: ConnectionID, now: Milliseconds) -> [Effect] {
        guard batches.count > 1 else {
            return batches.first.map { received(.events($0), on: id, now: now) } ?? []
        }
        guard var session = sessions[id] else { return [] }
        manager.heard(id, now: now)
        var accepted: [EventBatch] = []
        var refusal: [SyncSession.Directive] = []
        for batch in batches {
            for directive in session.receive(.events(batch)) {
                if case .ingest(let batch) = directive { accepted.append(batch) } else { refusal.append(directive) }
            }
            if !refusal.isEmpty { break }
        }
        sessions[id] = session
        let (answers, stored) = store(accepted, from: id)
        var effects = perform(answers + refusal, on: id, now: now)
        if stored { effects += broadcastCursor(except: id, now: now) }
        noteProgress(on: id, received: accepted.reduce(0) { $0 + $1.events.count }, now: now)
        return effects
    }

    /// After messages on a connection: when the two replicas were last in
    /// sync, and the catch-up log.
    private func noteProgress(on id: ConnectionID, received: Int, now: Milliseconds) {
        if let session = sessions[id], let peer = session.peer, session.progress == (0, 0) {
            lastInSyncAt[peer.replicaID] = now
        }
        observeCatchUp(on: id, received: received, now: now)
    }

    /// Ingests `batches` in one transaction and returns the session's
    /// answers (an ack per batch, or the close when storing failed) and
    /// whether they were stored.
    private func store(_ batches: [EventBatch], from id: ConnectionID) -> (
        answers: [SyncSession.Directive], stored: Bool
    ) {
        guard !batches.isEmpty else { return ([], false) }
        guard ingest(batches.flatMap(\.events), from: id) else {
            var session = sessions[id]
            let closing = session?.close(reason: "cannot store events") ?? []
            sessions[id] = session
            return (closing, false)
        }
        var answers: [SyncSession.Directive] = []
        for batch in batches {
            answers += sessions[id]?.ingested(batchID: batch.batchID, cursor: cursor, batchFeeds: batch.feeds) ?? []
        }
        return (answers, true)
    }

    /// A connection is gone (closed by either side, or failed).
    public func connectionClosed(_ id: ConnectionID, now: Milliseconds) {
        sessions[id] = nil
        remoteHosts[id] = nil
        adverts[id] = nil
        catchUps[id] = nil
        manager.disconnected(id, now: now)
    }

    /// The timer: peer dialing and liveness, the anti-entropy round, and a
    /// check for events other processes wrote to the log.
    public func tick(now: Milliseconds) -> [Effect] {
        var effects = carryOut(manager.tick(now: now), now: now)
        if let counter = try? log.externalChangeCounter(), counter != lastExternalChange {
            lastExternalChange = counter
            effects += localChanged(now: now)
        }
        if lastAntiEntropyAt.map({ now - $0 >= configuration.antiEntropyIntervalMs }) ?? true {
            lastAntiEntropyAt = now
            // Hash only once the log has been quiet for a whole round: while
            // events keep coming, a summary is stale at once, and each one
            // costs a scan of every projection and ~60 bytes per peer.
            let quiet = cursor == cursorAtLastRound && lastExternalChange == externalChangeAtLastRound
            cursorAtLastRound = cursor
            externalChangeAtLastRound = lastExternalChange
            if quiet { writePendingProjections() }
            if !sessions.isEmpty && quiet { refreshLocalState() }
            for id in sessions.keys.sorted() {
                if localStateIsCurrent, let localState { sessions[id]!.localStateComputed(localState) }
                effects += perform(sessions[id]!.tick(), on: id, now: now)
                observeCatchUp(on: id, received: 0, now: now)
            }
        }
        return effects
    }

    /// The log gained events this node did not ingest itself (a local
    /// append): push them to the peers that lack them.
    public func localChanged(now: Milliseconds) -> [Effect] {
        do {
            let fresh = try log.cursor()
            guard fresh != cursor else { return [] }
            cursor = fresh
        } catch {
            emit(LogRecord(.error, "cannot read the cursor", [("error", "\(error)")]))
            return []
        }
        return broadcastCursor(except: nil, now: now)
    }

    /// Closes every session with a goodbye.
    public func shutdown(reason: String, now: Milliseconds) -> [Effect] {
        // A clean stop leaves the file with every projection row written.
        writePendingProjections()
        var effects: [Effect] = []
        for id in sessions.keys.sorted() {
            var session = sessions[id]!
            let directives = session.close(reason: reason)
            sessions[id] = session
            effects += perform(directives, on: id, now: now)
        }
        return effects
    }

    private func broadcastCursor(except excluded: ConnectionID?, now: Milliseconds) -> [Effect] {
        var effects: [Effect] = []
        for id in sessions.keys.sorted() where id != excluded {
            effects += perform(sessions[id]!.localCursorChanged(cursor), on: id, now: now)
        }
        return effects
    }

    /// The peer manager's directives as network effects; a connection it
    /// closes gets a goodbye with the reason first when its session runs.
    private func carryOut(_ directives: [PeerManager.Directive], now: Milliseconds) -> [Effect] {
        var effects: [Effect] = []
        for directive in directives {
            switch directive {
            case .dial(let address):
                effects.append(.dial(address))
            case .close(let id, let reason):
                guard var session = sessions[id] else {
                    effects.append(.close(id, reason: reason))
                    continue
                }
                let closing = session.close(reason: reason)
                sessions[id] = session
                effects += perform(closing, on: id, now: now)
            }
        }
        return effects
    }

    /// Carries out a session's directives; storage answers go straight back
    /// into the session, so one call returns only network effects.
    private func perform(_ directives: [SyncSession.Directive], on id: ConnectionID, now: Milliseconds) -> [Effect] {
        var effects: [Effect] = []
        var queue = directives[...]
        while let directive = queue.popFirst() {
            switch directive {
            case .send(let message):
                if case .events(let batch) = message { statistics.eventsSent += batch.events.count }
                effects.append(.send(id, message))
            case .close(let reason):
                effects.append(.close(id, reason: reason))
            case .identified(let hello):
                emit(
                    LogRecord(
                        .info, "peer identified",
                        [("conn", "\(id)"), ("peer", hello.replicaID), ("role", "\(hello.role)")]))
                effects += carryOut(manager.identified(id, replicaID: hello.replicaID, now: now), now: now)
                effects += exchangePeers(on: id, hello: hello)
            case .learned(let learned):
                for advert in learned where advert.replicaID != configuration.hello.replicaID {
                    manager.addPeer(advert.address, source: .exchanged, replicaID: advert.replicaID, now: now)
                }
            case .readEvents(let ranges, let maxEvents, let maxBytes):
                let page = readPage(ranges, maxEvents: maxEvents, maxBytes: maxBytes)
                queue.append(contentsOf: sessions[id]?.eventsRead(page) ?? [])
            case .ingest(let batch):
                let (answers, stored) = store([batch], from: id)
                queue.append(contentsOf: answers)
                if stored { effects += broadcastCursor(except: id, now: now) }
            }
        }
        return effects
    }

    /// Peer exchange: tells a newly identified peer every replica address we
    /// know, and every other peer the new one's address.
    private func exchangePeers(on id: ConnectionID, hello: Hello) -> [Effect] {
        let connection = manager.connections[id]
        let address =
            connection?.dialed
            ?? remoteHosts[id].flatMap { host in
                hello.listenPort == 0 ? nil : PeerAddress(host: host, port: hello.listenPort)
            }
        var effects: [Effect] = []
        let known = knownAdverts().filter { $0.replicaID != hello.replicaID }
        if !known.isEmpty { effects.append(.send(id, .peers(known))) }
        if let address {
            let advert = PeerAdvert(replicaID: hello.replicaID, address: address)
            adverts[id] = advert
            for other in sessions.keys.sorted() where other != id && sessions[other]?.peer != nil {
                effects.append(.send(other, .peers([advert])))
            }
        }
        return effects
    }

    /// When this node and `replicaID` last had equal cursors.
    func lastInSyncAt(_ replicaID: String) -> Milliseconds? { lastInSyncAt[replicaID] }

    /// Where the replica on connection `id` accepts connections, if known.
    func advert(for id: ConnectionID) -> PeerAdvert? { adverts[id] }

    /// Addresses of replicas we are connected to or have reached before.
    private func knownAdverts() -> [PeerAdvert] {
        var byReplica: [String: PeerAdvert] = [:]
        for target in manager.targets.values.sorted(by: { $0.address < $1.address }) {
            if let replicaID = target.replicaID, replicaID != configuration.hello.replicaID,
                target.state != .retired
            {
                byReplica[replicaID] = PeerAdvert(replicaID: replicaID, address: target.address)
            }
        }
        for advert in adverts.values { byReplica[advert.replicaID] = advert }
        return byReplica.values.sorted { $0.replicaID < $1.replicaID }
    }

    /// The next page of `ranges`, in canonical order across feeds.
    private func readPage(_ ranges: [FeedRange], maxEvents: Int, maxBytes: Int) -> [Event] {
        do {
            return try log.eventsInCanonicalOrder(
                of: ranges.map { ($0.feed, $0.seqs) }, maxEvents: maxEvents, maxBytes: maxBytes)
        } catch {
            emit(LogRecord(.error, "cannot read events", [("error", "\(error)")]))
            return []
        }
    }

    /// Stores a received batch; false when storage failed (nothing of it is kept).
    private func ingest(_ events: [Event], from id: ConnectionID) -> Bool {
        let peer = sessions[id]?.peer?.replicaID ?? "?"
        let report: IngestReport
        do {
            report = try log.ingest(events)
            cursor = try log.cursor()
        } catch {
            emit(LogRecord(.error, "ingest failed", [("peer", peer), ("error", "\(error)")]))
            return false
        }
        statistics.eventsReceived += events.count
        statistics.eventsStored += report.stored.count
        record(report)
        if !report.stored.isEmpty { onStored?(report.stored) }
        for fork in report.forks {
            emit(LogRecord(.warning, "fork quarantined", [("peer", peer), ("detail", fork.description)]))
        }
        for gap in report.gaps {
            emit(LogRecord(.info, "gap rejected", [("peer", peer), ("detail", gap.description)]))
        }
        for invalid in report.invalid {
            emit(LogRecord(.warning, "invalid event quarantined", [("peer", peer), ("detail", invalid.description)]))
        }
        for (origin, skew) in report.clockSkewMs.sorted(by: { $0.key < $1.key }) {
            emit(LogRecord(.warning, "clock far ahead", [("origin", origin), ("ahead_ms", "\(skew)")]))
            clockSkewMs[origin] = max(clockSkewMs[origin] ?? 0, skew)
        }
        return true
    }
}

/// Counters of one node's sync since it started.
public struct SyncStatistics: Sendable, Hashable {
    public var eventsSent = 0
    public var eventsReceived = 0
    public var eventsStored = 0
}
