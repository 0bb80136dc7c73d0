import PeerNet
import Replica
import SyncProtocol

/// The node's effects on real sockets and real storage, and storage's
/// answers back into the node (loop thread only).
extension GossipService {
    func carryOut(_ effects: [SyncNode.Effect]) {
        for effect in effects {
            switch effect {
            case .send(let id, let message):
                send(message, on: id)
            case .dial(let address):
                dial(address)
            case .close(let id, let reason):
                close(id, reason: reason, flush: true)
            case .read(let id, let ranges, let maxEvents, let maxBytes):
                storage.read(ranges, maxEvents: maxEvents, maxBytes: maxBytes) { [self] page in
                    loop.execute { [self] in carryOut(node.eventsRead(page, on: id, now: loop.now)) }
                }
            case .store(let id, let batches, let keys):
                storage.store(batches, keys: keys) { [self] outcome in
                    loop.execute { [self] in carryOut(node.stored(outcome, on: id, now: loop.now)) }
                }
            case .computeState:
                storage.computeState { [self] report in
                    loop.execute { [self] in carryOut(node.stateComputed(report, now: loop.now)) }
                }
            case .writePendingProjections:
                storage.writePendingProjections()
            case .quarantine(let proofs, let keys):
                storage.quarantine(proofs, keys: keys)
            case .keepCertificates(let certificates):
                storage.keep(certificates)
            case .compareHeads(let heads, let keys):
                storage.compare(heads, keys: keys) { [self] proofs in
                    loop.execute { [self] in carryOut(node.forksFound(proofs, now: loop.now)) }
                }
            case .revoked(let revocations):
                configuration.storeRevocations(revocations)
            case .takeCheckpoint, .readBases, .startFromCheckpoint, .keepAcks, .dropHistory:
                storage.checkpointWork(effect) { [self] answer in
                    loop.execute { [self] in carryOut(answer.deliver(to: &node, now: loop.now)) }
                }
            }
        }
        scheduleNodeTimer()
    }

    /// Connections per millisecond between two takes of `changes`: a relay
    /// holding 1,000 replicas pushes what was committed at most every 25 ms,
    /// as one batch per session, instead of one batch per write each; a node
    /// with a few dozen pushes each commit at once.
    static let connectionsPerSpacingMs = 40
    static let maximumSpacingMs: Int64 = 25

    /// The commits waiting in `changes` go to the node as one (loop thread),
    /// or at the next take due when the last one was too recent.
    func takeChanges() {
        let spacing = min(Self.maximumSpacingMs, Int64(connections.count / Self.connectionsPerSpacingMs))
        let due = changesTakenAt + spacing
        guard loop.now >= due else {
            guard !changesTakeScheduled else { return }
            changesTakeScheduled = true
            _ = loop.schedule(at: due) { [self] in
                changesTakeScheduled = false
                takeChanges()
            }
            return
        }
        guard let change = changes.take() else { return }
        changesTakenAt = loop.now
        // Certificates first: a peer hears of a key before the events it verifies.
        let learned = node.learnStored(change.certificates, now: loop.now)
        let moved = node.localChanged(
            cursor: change.cursor, committed: change.committed, signed: change.signed, now: loop.now)
        carryOut(learned + moved + (change.storedElsewhere ? node.storedElsewhere(now: loop.now) : []))
    }

    /// Sleeps until the node's next deadline (an earlier timer stays).
    func scheduleNodeTimer() {
        guard !shuttingDown else { return }
        // Never sooner than the next millisecond: a deadline that a tick could
        // not move would make the loop spin (PeerManagerTests check that none is).
        let deadline = max(node.nextDeadline, loop.now + 1)
        if let timer = nodeTimer {
            guard deadline < timer.at else { return }
            loop.cancel(timer.id)
        }
        let id = loop.schedule(at: deadline) { [self] in
            nodeTimer = nil
            carryOut(node.tick(now: loop.now))
        }
        nodeTimer = (id, deadline)
    }

    func currentMetrics() -> SyncMetrics {
        var metrics = node.metrics()
        metrics.connectionsOpen = connections.count
        metrics.connectionsPending = pending.total
        metrics.handshakeFailures = handshakeFailures
        metrics.connectionsRefused = Dictionary(
            uniqueKeysWithValues: refusals.totals.map { ($0.key.rawValue, $0.value) })
        metrics.bytesReceived = closedTraffic.received
        metrics.bytesSent = closedTraffic.sent
        for connection in connections.values {
            metrics.bytesReceived += connection.bytesReceived
            metrics.bytesSent += connection.bytesSent
        }
        return metrics
    }

    func currentSnapshots() -> [ConnectionSnapshot] {
        connections.values.sorted { $0.id < $1.id }.map { connection in
            let session = node.sessions[connection.id]
            return ConnectionSnapshot(
                id: connection.id, peer: session?.peer, remoteHost: connection.remoteHost,
                dialed: connection.dialed, bytesReceived: connection.bytesReceived,
                bytesSent: connection.bytesSent, eventsToReceive: session?.progress.toReceive ?? 0,
                eventsToSend: session?.progress.toSend ?? 0)
        }
    }

    /// Shutdown: no new connections, goodbyes to every peer, strangers cut;
    /// `done` runs once every connection has closed.
    func beginShutdown(reason: String, done: @escaping @Sendable () -> Void) {
        shuttingDown = true
        if let timer = nodeTimer { loop.cancel(timer.id) }
        nodeTimer = nil
        if let listener {
            loop.unwatch(listener.descriptor)
            listener.shutdown()
            self.listener = nil
        }
        drained = done
        carryOut(node.shutdown(reason: reason, now: loop.now))
        for connection in connections.values where !connection.isEstablished {
            close(connection.id, reason: reason, flush: false)
        }
        finishShutdownIfDrained()
    }

    func finishShutdownIfDrained() {
        guard shuttingDown, connections.isEmpty, let drained else { return }
        self.drained = nil
        drained()
    }
}
