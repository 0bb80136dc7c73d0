import Replica

/// Storage work that failed: what the shell reports, for the log.
public struct StorageFailure: Error, Hashable, Sendable, CustomStringConvertible {
    public var message: String
    /// The error of the storage call, for a shell to tell a damaged file
    /// from a refusal; not part of equality.
    public var cause: (any Error)?

    public init(_ message: String, cause: (any Error)? = nil) {
        self.message = message
        self.cause = cause
    }

    public var description: String { message }

    public static func == (lhs: StorageFailure, rhs: StorageFailure) -> Bool { lhs.message == rhs.message }
    public func hash(into hasher: inout Hasher) { hasher.combine(message) }
}

/// What storing a run of batches did: the ingest's report and the cursor
/// right after it.
public struct StoreOutcome: Sendable {
    public var report: IngestReport
    public var cursor: VectorCursor
    /// The signed heads the ingest stored (`EventLog.signedByLastWrite`).
    public var signed: [SignedHead]

    public init(report: IngestReport, cursor: VectorCursor, signed: [SignedHead] = []) {
        self.report = report
        self.cursor = cursor
        self.signed = signed
    }
}

extension SyncNode {
    /// The storage work of each connection: a store out (and the messages
    /// that arrived meanwhile), a read out, and work parked after a failure
    /// until `retryAt`.
    struct StorageWork: Sendable {
        struct Connection: Sendable {
            /// The batches of the store that is out, or parked after a failure.
            var storing: [EventBatch]?
            var storeParked = false
            /// Messages that arrived while a store was out, in order.
            var queued: [Message] = []
            /// The read that is out, or parked after a failure.
            var reading: Effect?
            var readParked = false
        }

        var connections: [ConnectionID: Connection] = [:]
        /// When parked work is tried again.
        var retryAt: Milliseconds?
        /// A `.computeState` is out.
        var hashing = false
        /// The fold changed while it was out: its answer may describe the state before.
        var hashingStale = false
        /// No `.computeState` before this, after one failed.
        var hashAgainAt: Milliseconds?

        func isBusy(_ id: ConnectionID) -> Bool { connections[id]?.storing != nil }

        mutating func queue(_ messages: [Message], on id: ConnectionID) {
            connections[id, default: Connection()].queued += messages
        }

        mutating func reading(_ read: Effect, on id: ConnectionID) {
            connections[id, default: Connection()].reading = read
        }

        mutating func forget(_ id: ConnectionID) {
            connections[id] = nil
        }
    }

    /// Messages of one connection, in order: every message but an event
    /// batch goes to the session at once; a run of batches goes to the
    /// session and then to storage as one `.store`, and whatever follows
    /// waits for its answer.
    mutating func process(_ messages: ArraySlice<Message>, on id: ConnectionID, now: Milliseconds) -> [Effect] {
        var effects: [Effect] = []
        var run: [EventBatch] = []
        var rest = messages
        while let message = rest.first, sessions[id] != nil {
            if case .events = message {
                rest.removeFirst()
                var refused: [SyncSession.Directive] = []
                for directive in sessions[id]!.receive(message) {
                    switch directive {
                    case .ingest(let batch): run.append(withoutUnwritable(withoutRevoked(batch, on: id), on: id))
                    case .refusedWrites(let events): noteRefusedWrites(events, on: id)
                    default: refused.append(directive)
                    }
                }
                guard refused.isEmpty else {
                    // Out of order: the session closes; nothing of the run is stored.
                    return effects + perform(refused, on: id, now: now)
                }
                continue
            }
            if !run.isEmpty { break }
            rest.removeFirst()
            effects += perform(sessions[id]!.receive(message), on: id, now: now)
            if case .state = message, sessions[id]?.peerStateCursor == cursor { peerDescribesCursor = true }
            if case .cursor(let heads) = message { awaitPrunedFeeds(heads, on: id, now: now) }
            noteProgress(on: id, received: 0, now: now)
        }
        guard !run.isEmpty, sessions[id] != nil else { return effects }
        storage.connections[id, default: StorageWork.Connection()].storing = run
        storage.connections[id]!.queued = Array(rest) + storage.connections[id]!.queued
        return effects + [.store(id, run, keys: verificationKeys)]
    }

    /// Storage answered a `.store`: acknowledge each batch, tell the other
    /// sessions, and go on with the messages that waited.
    public mutating func stored(
        _ outcome: Result<StoreOutcome, StorageFailure>, on id: ConnectionID, now: Milliseconds
    ) -> [Effect] {
        guard let batches = storage.connections[id]?.storing, sessions[id] != nil else { return [] }
        let peer = sessions[id]?.peer?.replicaID ?? "?"
        switch outcome {
        case .failure(let failure):
            // The storage shell logs the failure itself (a fault once, as it degrades).
            emit(
                LogRecord(
                    .debug, .storageFailed, "cannot store events",
                    [("while", "store"), ("peer", peer), ("error", failure.message)]))
            storage.connections[id]!.storeParked = true
            scheduleRetry(now: now)
            return []
        case .success(let done):
            storage.connections[id]!.storing = nil
            let moved = raiseCursor(to: done.cursor, now: now)
            let delivered = batches.reduce(0) { $0 + $1.events.count }
            statistics.eventsReceived += delivered
            statistics.eventsStored += done.report.stored.count
            if done.report.stored.count <= RecentEvents.liveBatchEvents {  // live events, not a catch-up page
                recent.remember(done.report.stored.lazy.map(\.event), signed: done.signed)
            }
            record(done.report, from: peer)
            noteRefusedRuns(done.report, from: peer, now: now)
            var answers: [SyncSession.Directive] = []
            let fresh = Self.newEvents(in: batches, stored: done.report.stored)
            let direct = configuration.session.prunesLinks ? directOrigins : []
            for (batch, newEvents) in zip(batches, fresh) {
                answers += sessions[id]!.ingested(
                    batchID: batch.batchID, cursor: cursor, batchFeeds: batch.feeds, newEvents: newEvents,
                    directOrigins: direct)
            }
            var effects = perform(answers, on: id, now: now)
            if moved { effects += broadcastCursor(except: id, now: now) + logGrew(now: now) }
            effects += learn(done.report.forkProofs, from: id, foundHere: true, now: now)
            noteProgress(on: id, received: delivered, now: now)
            let queued = storage.connections[id]?.queued ?? []
            storage.connections[id]?.queued = []
            return effects + process(queued[...], on: id, now: now)
        }
    }

    /// The replicas this node syncs with directly.
    var directOrigins: Set<String> {
        var origins: Set<String> = []
        for session in sessions.values where session.isSyncing {
            if let peer = session.peer { origins.insert(peer.replicaID) }
        }
        return origins
    }

    /// Per batch of a stored run: how many of its events per feed the
    /// ingest stored (the rest were held already or refused). A batch holds
    /// one run of seqs per feed, so an event belongs to the first batch
    /// whose run of its feed covers its seq.
    static func newEvents(in batches: [EventBatch], stored: [StoredEvent]) -> [[FeedID: Int]] {
        var counts = Array(repeating: [FeedID: Int](), count: batches.count)
        guard batches.count > 1 else {
            for stored in stored { counts[0][stored.event.feed, default: 0] += 1 }
            return batches.isEmpty ? [] : counts
        }
        var runs = Array(repeating: [FeedID: ClosedRange<UInt64>](), count: batches.count)
        for (index, batch) in batches.enumerated() {
            for event in batch.events {
                let run = runs[index][event.feed]
                runs[index][event.feed] =
                    min(
                        run?.lowerBound ?? event.seq, event.seq)...max(
                        run?.upperBound ?? event.seq, event.seq)
            }
        }
        for stored in stored {
            let event = stored.event
            if let index = runs.firstIndex(where: { $0[event.feed]?.contains(event.seq) ?? false }) {
                counts[index][event.feed, default: 0] += 1
            }
        }
        return counts
    }

    /// Storage answered a `.read`: the session makes its next batch of it.
    public mutating func eventsRead(
        _ outcome: Result<EventPage, StorageFailure>, on id: ConnectionID, now: Milliseconds
    ) -> [Effect] {
        guard sessions[id] != nil, storage.connections[id]?.reading != nil else { return [] }
        switch outcome {
        case .failure(let failure):
            let peer = sessions[id]?.peer?.replicaID ?? "?"
            emit(
                LogRecord(
                    .debug, .storageFailed, "cannot read events",
                    [("while", "read"), ("peer", peer), ("error", failure.message)]))
            storage.connections[id]!.readParked = true
            scheduleRetry(now: now)
            return []
        case .success(let page):
            storage.connections[id]!.reading = nil
            return perform(sessions[id]!.eventsRead(page), on: id, now: now)
        }
    }

    /// Storage answered `.computeState`: the summary goes to the peers once
    /// it describes what they have been told we hold.
    public mutating func stateComputed(_ outcome: Result<StateReport, StorageFailure>, now: Milliseconds) -> [Effect] {
        storage.hashing = false
        defer { storage.hashingStale = false }
        guard !storage.hashingStale else { return [] }  // asked before a refold: hashed again when due
        switch outcome {
        case .failure(let failure):
            emit(
                LogRecord(
                    .debug, .storageFailed, "cannot hash the state", [("while", "hash"), ("error", failure.message)]))
            storage.hashAgainAt = now + configuration.storageRetryMs
            return []
        case .success(let report):
            // Writes may have passed it: it still describes its cursor, where a peer's may meet it. One
            // ahead of what storage told the node yet (a store not answered) is hashed again once it is.
            guard localState.map({ $0.cursor.missingCount(from: report.cursor) > 0 }) ?? true,
                cursor.missingCount(from: report.cursor) == 0
            else { return [] }
            localState = report
            var effects: [Effect] = []
            for id in sessions.keys.sorted() {
                effects += perform(sessions[id]!.localStateComputed(report), on: id, now: now)
            }
            return effects
        }
    }

    /// The fold changed without the cursor moving (a checkpoint taken, or
    /// a start or move onto one, refolds entities whose events sort before
    /// its bases): the state is hashed again at the same cursor, and the new
    /// summary goes to the peers, which compare it anew.
    mutating func forgetLocalState() {
        localState = nil
        if storage.hashing { storage.hashingStale = true }
    }

    /// True when `localState` describes the log as this node last heard of it.
    var localStateIsCurrent: Bool { localState?.cursor == cursor }

    /// When the state is hashed next (`Configuration.stateQuietMs`): at
    /// once where a peer's summary waits at this very cursor; in a lull at
    /// a sampled cursor; or once the cursor settled. Each hash reads every
    /// projection and costs ~60 bytes per peer, so a log that keeps taking
    /// writes is hashed a few times a second at most, and every replica
    /// holding the same events picks the same cursors.
    var stateHashDueAt: Milliseconds? {
        guard !sessions.isEmpty, !localStateIsCurrent, !storage.hashing else { return nil }
        var due: Milliseconds
        if peerDescribesCursor {
            due = cursorMovedAt  // the peer's summary is compared as soon as ours is known
        } else {
            let sampled = cursor.eventCount % max(configuration.stateSampleEvery, 1) == 0
            due = cursorMovedAt + (sampled ? configuration.stateQuietMs : configuration.stateHashSpacingMs)
            if let last = lastHashAt { due = max(due, last + configuration.stateHashGapMs) }
        }
        if let again = storage.hashAgainAt { due = max(due, again) }
        return due
    }

    /// Whether a session's peer reported its state at `cursor`, by a pass
    /// over the sessions: when the cursor moved or a session went.
    mutating func notePeerStates() {
        let values = sessions.values
        peerDescribesCursor = values.indices.contains { values[$0].peerStateCursor == cursor }
    }

    /// Asks storage for the state summary at the cursor now.
    mutating func hashState(now: Milliseconds) -> [Effect] {
        storage.hashing = true
        storage.hashAgainAt = nil
        lastHashAt = now
        return [.computeState]
    }

    /// A peer reported its state at `reported`: when our log stands there
    /// and ours is not known, it is hashed now, so that the two can be
    /// compared while writes go on. Not bound by `stateHashGapMs`: peers
    /// report sampled or settled cursors, and each cursor is hashed once.
    mutating func hashForPeer(at reported: VectorCursor, now: Milliseconds) -> [Effect] {
        guard reported == cursor, !localStateIsCurrent, !storage.hashing,
            storage.hashAgainAt.map({ $0 <= now }) ?? true
        else { return [] }
        return hashState(now: now)
    }

    /// The round: every session says what changed in our cursor (the
    /// keepalive). On a quiet log (no change for a whole round) the pending
    /// projection rows are written, and the state is hashed for the peers.
    mutating func antiEntropyRound(now: Milliseconds) -> [Effect] {
        var effects: [Effect] = []
        let quiet = cursor == cursorAtLastRound
        cursorAtLastRound = cursor
        if quiet && projectionsWrittenAt != cursor {
            projectionsWrittenAt = cursor
            effects.append(.writePendingProjections)
        }
        for id in sessions.keys.sorted() {
            effects += perform(sessions[id]!.tick(), on: id, now: now)
            observeCatchUp(on: id, received: 0, now: now)
            effects += noteDivergence(on: id)
        }
        return effects + checkpointRound(now: now)
    }

    /// Storage answered `.compareHeads`: the forks a peer's heads proved.
    public mutating func forksFound(_ outcome: Result<[ForkProof], StorageFailure>, now: Milliseconds) -> [Effect] {
        switch outcome {
        case .failure(let failure):
            emit(
                LogRecord(
                    .debug, .storageFailed, "cannot compare heads",
                    [("while", "compare_heads"), ("error", failure.message)]))
            return []
        case .success(let proofs):
            return learn(proofs, from: nil, foundHere: true, now: now)
        }
    }

    /// Logs once per peer replica that it holds our cursor and another
    /// state, and shows it our signed heads, so that a fork is pinned to its feed.
    private mutating func noteDivergence(on id: ConnectionID) -> [Effect] {
        guard let session = sessions[id], let peer = session.peer?.replicaID else { return [] }
        guard diverges(session) else { return [] }
        guard divergedPeers.insert(peer).inserted else { return [] }
        let heads = (localState?.heads ?? []).filter { $0.signature != nil && session.mayRead($0.feed) }
        emit(
            LogRecord(
                .warning, .stateDiverged, "fork: same cursor, different state",
                [
                    ("peer", peer),
                    (
                        "detail",
                        "the two replicas hold different events at the same feed positions (a replica restored from "
                            + "an old copy that wrote again?); compare `peerd export` of both"
                    ),
                ]))
        return heads.isEmpty ? [] : [.send(id, .heads(heads))]
    }

    private mutating func scheduleRetry(now: Milliseconds) {
        let at = now + configuration.storageRetryMs
        storage.retryAt = min(storage.retryAt ?? at, at)
    }

    /// Sends every parked read and store again.
    mutating func retryStorage() -> [Effect] {
        storage.retryAt = nil
        var effects: [Effect] = []
        for id in storage.connections.keys.sorted() {
            let work = storage.connections[id]!
            if work.storeParked, let batches = work.storing {
                storage.connections[id]!.storeParked = false
                effects.append(.store(id, batches, keys: verificationKeys))
            }
            if work.readParked, let read = work.reading {
                storage.connections[id]!.readParked = false
                effects.append(read)
            }
        }
        return effects
    }
}
