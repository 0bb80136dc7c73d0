import Replica

/// Checkpoints while sessions run (docs/protocol.md "Checkpoints over the
/// wire"): every replica shows its chain to its peers; one that holds the
/// covered events recomputes each new checkpoint before it folds from it
/// and reports one that does not match; an empty one starts from the
/// newest it trusts; and once every member acknowledged the held one, the
/// events it covers may go.
extension SyncNode {
    /// The most checkpoints of the chain a newly identified peer is shown.
    static let chainShown = 16
    /// The most checkpoints kept waiting to be taken; the oldest learned go first.
    static let waitingLimit = 64
    /// The most checkpoints whose acknowledgements are kept.
    static let acknowledgedLimit = 64
    /// The most bases in one `bases` page, and about the most bytes.
    static let basesPerPage = 2_000
    static let basesPageBytes = 1 << 20

    /// The checkpoint this replica folds from; nil without one.
    public var heldCheckpoint: SignedCheckpoint? { checkpoints.held }

    /// The checkpoints this replica refused, newest first.
    public var refusedCheckpoints: [RefusedCheckpoint] {
        checkpoints.refused.values.sorted { ($0.atMs, $0.id) > ($1.atMs, $1.id) }
    }

    /// Whether the log holds every event its checkpoint covers (it neither
    /// started from a checkpoint nor dropped history).
    public var holdsCheckpointHistory: Bool { checkpoints.floor == nil }

    /// The cursor at or below which the log holds no event (empty: it holds every event).
    public var historyFloor: VectorCursor { checkpoints.historyFloor }

    /// True while an empty log waits for or fetches a checkpoint to start from.
    public var isStartingFromCheckpoint: Bool { checkpoints.holdsCursors }

    /// The replicas whose acknowledgement of a checkpoint the history
    /// waits for: every certificate this node knows that is not revoked
    /// (in an open cluster, every replica seen: their self-signed ones),
    /// this replica's own, less the retired.
    public var members: Set<String> {
        var members = Set(certificates.keys).union([configuration.hello.replicaID])
        members.subtract(revoked.keys)
        members.subtract(checkpoints.retired)
        return members
    }

    /// Retires a replica of an open cluster for good (`peerd retire`): its
    /// missing acknowledgement no longer holds the history.
    public mutating func retire(_ replicaID: String, now: Milliseconds) -> [Effect] {
        guard checkpoints.retired.insert(replicaID).inserted else { return [] }
        return dropHistoryIfStable(now: now)
    }

    /// The replicas retired here.
    public var retiredReplicas: Set<String> { checkpoints.retired }

    /// The wall clock (Unix ms): checkpoints are made, taken and kept in its time.
    var wallClockMs: Milliseconds { Milliseconds(clamping: configuration.session.trust.wallClockMs()) }

    /// Where dropping the held checkpoint's history stands.
    public var historyCollection: HistoryCollection {
        let retention = configuration.retention
        guard let held = checkpoints.held else {
            return HistoryCollection(stage: .off, retention: retention, checkpoint: nil, blockers: [], acknowledged: [])
        }
        let acks = checkpoints.heldAcks
        let missing = members.filter { acks[$0] == nil }.sorted()
        let stage: HistoryCollection.Stage =
            if !checkpoints.holdsDroppableHistory {
                .dropped
            } else if retention == .everything {
                .off
            } else if !missing.isEmpty {
                .blocked
            } else {
                .retained
            }
        return HistoryCollection(
            stage: stage, retention: retention, checkpoint: Hex.string(held.content.id),
            blockers: missing.map { ($0, checkpoints.takenMs) }, acknowledged: acks.keys.sorted())
    }

    // MARK: - Showing and learning checkpoints

    /// A newly identified peer that may read every feed is shown the chain
    /// and the acknowledgements this node knows.
    mutating func greetWithCheckpoint(_ id: ConnectionID, now: Milliseconds) -> [Effect] {
        if case .undecided(nil) = checkpoints.start { checkpoints.start = .undecided(since: now) }
        guard sessions[id]?.hidesFeeds == false else { return [] }
        // Sent empty too: an empty peer then knows at once that no start comes from here.
        var effects: [Effect] = [.send(id, .checkpoints(Array(checkpoints.chain.suffix(Self.chainShown))))]
        guard let held = checkpoints.held else { return effects }
        let acks = checkpoints.acks[held.content.id] ?? [:]
        if !acks.isEmpty { effects.append(.send(id, .checkpointAcks(acks.keys.sorted().map { acks[$0]! }))) }
        let floor = checkpoints.historyFloor
        if !floor.heads.isEmpty { effects.append(.send(id, .historyFloor(floor))) }
        return effects
    }

    /// A checkpoint this replica's operator gave (`POST /checkpoints`): as if a peer had sent it.
    public mutating func checkpointGiven(_ checkpoint: SignedCheckpoint, now: Milliseconds) -> [Effect] {
        learn([checkpoint], from: nil, now: now)
    }

    /// Checkpoints a peer showed (or the operator gave, `from: nil`), oldest
    /// first: an untrusted one is refused; an empty log that may start from
    /// one takes the newest as an offer; otherwise each newer than the held
    /// one is recomputed from the log, in order.
    mutating func learn(_ shown: [SignedCheckpoint], from source: ConnectionID?, now: Milliseconds) -> [Effect] {
        let peer = source.flatMap { sessions[$0]?.peer?.replicaID } ?? ""
        if let source {
            checkpoints.answered.insert(source)
            notePeerShowed(shown, on: source)
        }
        var trusted: [SignedCheckpoint] = []
        for checkpoint in shown where isNew(checkpoint) {
            guard isTrusted(checkpoint) else {
                refuse(
                    checkpoint, .untrusted, detail: "its signer is not one this cluster trusts", peer: peer, now: now)
                continue
            }
            trusted.append(checkpoint)
        }
        guard let newest = trusted.last else { return decideStartIfDue(now: now) + rebaseIfBehind(now: now) }
        switch checkpoints.start {
        case .undecided:
            guard let source else { break }
            checkpoints.offers[source] = newest
            return fetchBases(of: newest, from: source, now: now)
        case .fetching(_, _, _, _, _, rebase: false), .starting(_, _, _, _, rebase: false):
            if let source { checkpoints.offers[source] = newest }
            return []
        case .fetching, .starting, .decided:
            break
        }
        for checkpoint in trusted where !checkpoints.waiting.contains(where: { $0.0 == checkpoint }) {
            checkpoints.waiting.append((checkpoint, peer))
        }
        if checkpoints.waiting.count > Self.waitingLimit {
            checkpoints.waiting.removeFirst(checkpoints.waiting.count - Self.waitingLimit)
        }
        return takeNext()
    }

    /// Not held, not an earlier one of the chain, not being taken, not refused.
    private func isNew(_ checkpoint: SignedCheckpoint) -> Bool {
        let id = checkpoint.content.id
        if checkpoints.chain.contains(where: { $0.content.id == id }) { return false }
        if checkpoints.refused[Hex.string(id)] != nil { return false }
        if checkpoints.taking?.0 == checkpoint { return false }
        if let held = checkpoints.held, checkpoint.content.previous != held.content.id,
            held.content.cursor.missingCount(from: checkpoint.content.cursor) == 0
        {
            return false  // at or behind the held one, and not its successor: an earlier one of the chain
        }
        return true
    }

    /// Whether `checkpoint` extends a checkpoint this log no longer folds
    /// from (an earlier one of its chain, or none while it holds one): it
    /// belongs to another chain, which this log never takes.
    private func extendsAnotherChain(_ checkpoint: SignedCheckpoint) -> Bool {
        guard let held = checkpoints.held else { return false }
        guard let previous = checkpoint.content.previous else { return true }
        return previous != held.content.id && checkpoints.chain.contains { $0.content.id == previous }
    }

    /// docs/protocol.md "Who may sign a checkpoint".
    func isTrusted(_ checkpoint: SignedCheckpoint) -> Bool {
        var makerKeys = feedKeys.keys[checkpoint.content.madeBy] ?? []
        if checkpoint.content.madeBy == configuration.hello.replicaID, let key = configuration.identity?.key {
            makerKeys.append(key.publicKey)
        }
        return checkpoint.isTrusted(adminKey: configuration.session.trust.adminKey, makerKeys: makerKeys)
    }

    /// The waiting checkpoint that extends the held one (the first one, for
    /// a log that holds none) goes to storage once the log holds every
    /// event it covers; one of another chain is refused, and one whose
    /// predecessor is not known yet waits for it.
    mutating func takeNext(now: Milliseconds? = nil) -> [Effect] {
        // Not while bases are fetched: the log is about to fold from another checkpoint.
        guard checkpoints.taking == nil, !checkpoints.waiting.isEmpty, !checkpoints.isFetchingBases else { return [] }
        if let at = checkpoints.takeAgainAt {
            guard let now, at <= now else { return [] }
            checkpoints.takeAgainAt = nil
        }
        checkpoints.waiting = checkpoints.waiting.filter { isNew($0.0) }
        for (checkpoint, peer) in checkpoints.waiting where extendsAnotherChain(checkpoint) {
            let held = checkpoints.held.map { Hex.string($0.content.id) } ?? "none"
            let extends = checkpoint.content.previous.map(Hex.string) ?? "none"
            refuse(
                checkpoint, .otherChain, detail: "it extends checkpoint \(extends), this log folds from \(held)",
                peer: peer, now: now ?? wallClockMs)
        }
        let refused = checkpoints.refused
        checkpoints.waiting.removeAll { refused[Hex.string($0.0.content.id)] != nil }
        let heldID = checkpoints.held?.content.id
        guard
            let index = checkpoints.waiting.firstIndex(where: {
                $0.0.content.previous == heldID && cursor.missingCount(from: $0.0.content.cursor) == 0
            })
        else { return [] }
        let next = checkpoints.waiting.remove(at: index)
        checkpoints.taking = next
        return [.takeCheckpoint(next.0)]
    }

    /// The log grew: a waiting checkpoint whose events are all here now is taken.
    mutating func logGrew(now: Milliseconds) -> [Effect] {
        if case .undecided = checkpoints.start, !cursor.heads.isEmpty, checkpoints.offers.isEmpty {
            // A local write: the log is no longer empty, so it cannot start from a checkpoint.
            return settleStart(now: now)
        }
        return takeNext()
    }

    /// Storage answered `.takeCheckpoint`.
    public mutating func checkpointTaken(_ outcome: Result<TakenCheckpoint, StorageFailure>, now: Milliseconds)
        -> [Effect]
    {
        guard let (checkpoint, peer) = checkpoints.taking else { return [] }
        checkpoints.taking = nil
        switch outcome {
        case .success(let taken):
            // Already held: another process took it (`peerd checkpoint make` beside the daemon).
            let refolded = if case .taken(let refolded) = taken.taking { "\(refolded)" } else { "by another process" }
            emit(
                LogRecord(
                    .info, .checkpointTaken, "checkpoint recomputed and taken",
                    [
                        ("checkpoint", Hex.string(checkpoint.content.id)), ("made_by", checkpoint.content.madeBy),
                        ("signer", "\(checkpoint.signer)"), ("peer", peer), ("refolded", refolded),
                    ]))
            forgetLocalState()
            return hold(checkpoint, now: now) + takeNext()
        case .failure(let failure):
            switch failure.cause as? CheckpointError {
            case .mismatch(_, _, let detail):
                refuse(checkpoint, .mismatch, detail: detail, peer: peer, now: now)
            case .notApplicable(let detail):
                // One the log moved past meanwhile (it started from or moved onto a later one) is no refusal.
                if isNew(checkpoint) { refuse(checkpoint, .otherChain, detail: detail, peer: peer, now: now) }
            default:
                // The database was busy or failing: the same checkpoint is tried again later.
                emit(
                    LogRecord(
                        .debug, .storageFailed, "cannot take a checkpoint",
                        [("while", "take_checkpoint"), ("error", failure.message)]))
                checkpoints.waiting.insert((checkpoint, peer), at: 0)
                checkpoints.takeAgainAt = now + configuration.storageRetryMs
                return []
            }
            return takeNext()
        }
    }

    /// The log folds from `checkpoint` now: it is shown to every peer that
    /// may read all feeds, and this replica's acknowledgement goes with it.
    mutating func hold(_ checkpoint: SignedCheckpoint, now: Milliseconds) -> [Effect] {
        checkpoints.chain.append(checkpoint)
        if checkpoints.chain.count > Self.chainShown { checkpoints.chain.removeFirst() }
        checkpoints.takenMs = wallClockMs
        let id = checkpoint.content.id
        // Acknowledgements of the checkpoints before it are of no use now; those of
        // later ones (learned before this log could take them) are kept.
        let earlier = Set(checkpoints.chain.dropLast().map(\.content.id))
        checkpoints.acks = checkpoints.acks.filter { !earlier.contains($0.key) }
        var effects = acknowledge(checkpoint, tellPeers: false)
        let shown = (checkpoints.acks[id] ?? [:]).sorted { $0.key < $1.key }.map(\.value)
        for session in peersSeeingEveryFeed {
            effects.append(.send(session, .checkpoints([checkpoint])))
            if !shown.isEmpty { effects.append(.send(session, .checkpointAcks(shown))) }
        }
        return effects
    }

    /// This replica's signed acknowledgement of `checkpoint`, kept and
    /// stored (and sent to every peer that may read every feed when
    /// `tellPeers`); none without an identity key.
    private mutating func acknowledge(_ checkpoint: SignedCheckpoint, tellPeers: Bool) -> [Effect] {
        guard let key = configuration.identity?.key else { return [] }
        let own = CheckpointAck.sign(
            checkpoint: checkpoint.content.id, replicaID: configuration.hello.replicaID,
            ackedMs: UInt64(max(wallClockMs, 0)), by: key)
        checkpoints.acks[own.checkpoint, default: [:]][own.replicaID] = own
        let sends: [Effect] = tellPeers ? peersSeeingEveryFeed.map { .send($0, .checkpointAcks([own])) } : []
        return [.keepAcks([own])] + sends
    }

    /// The identified sessions whose peer may read every feed: the only ones
    /// shown checkpoints and acknowledgements (bases hold every feed's state).
    var peersSeeingEveryFeed: [ConnectionID] {
        sessions.keys.sorted().filter { sessions[$0]!.peer != nil && !sessions[$0]!.hidesFeeds }
    }

    private mutating func refuse(
        _ checkpoint: SignedCheckpoint, _ cause: RefusedCheckpoint.Cause, detail: String, peer: String,
        now: Milliseconds
    ) {
        let id = Hex.string(checkpoint.content.id)
        guard checkpoints.refused[id] == nil else { return }
        let signerKey = Hex.string(checkpoint.signerKey)
        checkpoints.refused[id] = RefusedCheckpoint(
            id: id, madeBy: checkpoint.content.madeBy, signer: "\(checkpoint.signer)", signerKey: signerKey,
            cause: cause, detail: detail, peer: peer, atMs: now)
        emit(
            LogRecord(
                cause == .mismatch ? .error : .warning, .checkpointRefused,
                cause == .mismatch
                    ? "checkpoint does not match this log's events" : "checkpoint refused",
                [
                    ("cause", cause.rawValue), ("checkpoint", id), ("made_by", checkpoint.content.madeBy),
                    ("signer", "\(checkpoint.signer)"), ("signer_key", signerKey), ("peer", peer),
                    ("detail", detail),
                ]))
    }

    // MARK: - Acknowledgements and dropping history

    /// Acknowledgements a peer sent: each new one whose key is its
    /// replica's is kept, stored and passed on.
    mutating func learn(_ learned: [CheckpointAck], from source: ConnectionID, now: Milliseconds) -> [Effect] {
        var fresh: [CheckpointAck] = []
        for ack in learned where checkpoints.acks[ack.checkpoint]?[ack.replicaID] == nil {
            guard feedKeys.keys[ack.replicaID]?.contains(ack.key) ?? false else { continue }
            checkpoints.acks[ack.checkpoint, default: [:]][ack.replicaID] = ack
            fresh.append(ack)
        }
        guard !fresh.isEmpty else { return [] }
        forgetAcksPastLimit()
        let sends: [Effect] = peersSeeingEveryFeed.filter { $0 != source }.map { .send($0, .checkpointAcks(fresh)) }
        return [.keepAcks(fresh)] + sends + dropHistoryIfStable(now: now)
    }

    /// Acknowledgements are kept for at most `acknowledgedLimit`
    /// checkpoints: besides the held, the waiting and the one being taken,
    /// those acknowledged longest ago go first (an acknowledgement may
    /// come before its checkpoint can be taken, so unknown ones are kept).
    private mutating func forgetAcksPastLimit() {
        guard checkpoints.acks.count > Self.acknowledgedLimit else { return }
        var needed = Set(checkpoints.waiting.map(\.0.content.id))
        if let held = checkpoints.held { needed.insert(held.content.id) }
        if let taking = checkpoints.taking { needed.insert(taking.0.content.id) }
        let forgettable = checkpoints.acks.filter { !needed.contains($0.key) }
            .map { (id: $0.key, newest: $0.value.values.map(\.ackedMs).max() ?? 0) }
            .sorted { ($0.newest, Hex.string($0.id)) < ($1.newest, Hex.string($1.id)) }
        for entry in forgettable.prefix(checkpoints.acks.count - Self.acknowledgedLimit) {
            checkpoints.acks[entry.id] = nil
        }
    }

    /// At the round: a take that failed is tried again, the held checkpoint
    /// is acknowledged if this replica has not yet (one it took before a
    /// restart, or while another process held it), and the history may go.
    mutating func checkpointRound(now: Milliseconds) -> [Effect] {
        var effects = takeNext(now: now)
        if let held = checkpoints.held, checkpoints.acks[held.content.id]?[configuration.hello.replicaID] == nil {
            effects += acknowledge(held, tellPeers: true)
        }
        return effects + dropHistoryIfStable(now: now) + rebaseIfBehind(now: now)
    }

    /// The history goes once every member acknowledged the held checkpoint
    /// and the retention period passed (causal stability).
    mutating func dropHistoryIfStable(now: Milliseconds) -> [Effect] {
        guard let held = checkpoints.held, checkpoints.holdsDroppableHistory, !checkpoints.dropping,
            let keepMs = configuration.retention.keepMs, checkpoints.dropAgainAt.map({ $0 <= now }) ?? true,
            wallClockMs - held.content.madeMs >= keepMs
        else { return [] }
        let acks = checkpoints.heldAcks
        guard members.allSatisfy({ acks[$0] != nil }) else { return [] }
        checkpoints.dropping = true
        return [.dropHistory(checkpoint: held.content.id)]
    }

    /// Storage answered `.dropHistory`: peers behind the checkpoint are no longer served from here.
    public mutating func historyDropped(
        _ outcome: Result<DroppedHistory, StorageFailure>, now: Milliseconds
    ) -> [Effect] {
        checkpoints.dropping = false
        var effects: [Effect] = []
        switch outcome {
        case .failure(let failure):
            checkpoints.dropAgainAt = now + configuration.storageRetryMs
            emit(
                LogRecord(
                    .warning, .storageFailed, "cannot drop the history a checkpoint covers",
                    [("while", "drop_history"), ("error", failure.message)]))
        case .success(let dropped):
            if let held = checkpoints.held, held.content.id == dropped.checkpoint { checkpoints.floor = held.content }
            localState = nil  // its event count was of the events held before
            let floor = checkpoints.historyFloor
            for id in sessions.keys { sessions[id]!.historyDropped(below: floor) }
            effects += tellFloor()
            emit(
                LogRecord(
                    .info, .historyDropped, "dropped the events every member's checkpoint covers",
                    [
                        ("checkpoint", Hex.string(dropped.checkpoint)), ("events", "\(dropped.events)"),
                        ("bytes_before", "\(dropped.bytesBefore)"), ("bytes_after", "\(dropped.bytesAfter)"),
                    ]))
        }
        return effects
    }

    // MARK: - Serving bases

    /// A peer asks for a page of the held checkpoint's bases.
    mutating func serveBases(of checkpoint: [UInt8], after: EntityName?, to id: ConnectionID) -> [Effect] {
        guard checkpoints.held?.content.id == checkpoint else {
            return [.send(id, .bases(checkpoint: checkpoint, page: [], last: true))]
        }
        return [
            .readBases(
                id, checkpoint: checkpoint, after: after, limit: Self.basesPerPage, maxBytes: Self.basesPageBytes)
        ]
    }

    /// Storage answered `.readBases`; nil: the log no longer folds from that checkpoint.
    public mutating func basesRead(
        _ outcome: Result<[EntityBase]?, StorageFailure>, of checkpoint: [UInt8], on id: ConnectionID,
        now: Milliseconds
    ) -> [Effect] {
        guard sessions[id] != nil else { return [] }
        switch outcome {
        case .success(let page?):
            // Pages go one after another without waiting to be asked: the next is read at
            // once, and an empty one ends them (a page cut by bytes may hold fewer bases).
            guard let next = page.last.map({ EntityName(type: $0.entityType, id: $0.entityID) }) else {
                return [.send(id, .bases(checkpoint: checkpoint, page: [], last: true))]
            }
            return [
                .send(id, .bases(checkpoint: checkpoint, page: page, last: false)),
                .readBases(
                    id, checkpoint: checkpoint, after: next, limit: Self.basesPerPage, maxBytes: Self.basesPageBytes),
            ]
        case .success(nil):
            return [.send(id, .bases(checkpoint: checkpoint, page: [], last: true))]
        case .failure(let failure):
            emit(
                LogRecord(
                    .debug, .storageFailed, "cannot read checkpoint bases",
                    [("while", "read_bases"), ("error", failure.message)]))
            return [.send(id, .bases(checkpoint: checkpoint, page: [], last: true))]
        }
    }
}

/// What taking a checkpoint did.
public struct TakenCheckpoint: Equatable, Sendable {
    public var taking: EventLog.Taking

    public init(taking: EventLog.Taking) {
        self.taking = taking
    }
}

/// What dropping a checkpoint's history did.
public struct DroppedHistory: Hashable, Sendable {
    public var checkpoint: [UInt8]
    public var events: Int
    public var bytesBefore: Int64
    public var bytesAfter: Int64

    public init(checkpoint: [UInt8], events: Int, bytesBefore: Int64, bytesAfter: Int64) {
        self.checkpoint = checkpoint
        self.events = events
        self.bytesBefore = bytesBefore
        self.bytesAfter = bytesAfter
    }
}
