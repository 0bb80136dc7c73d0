import Replica

/// A log that gets its state from a peer's checkpoint instead of the
/// history (docs/protocol.md "Checkpoints over the wire", "History
/// floors"): an empty one starts from the newest it trusts, and one that
/// lacks events its peers no longer hold moves onto their checkpoint.
extension SyncNode {
    // MARK: - Starting an empty log

    mutating func fetchBases(
        of checkpoint: SignedCheckpoint, from id: ConnectionID, rebase: Bool = false, now: Milliseconds
    ) -> [Effect] {
        checkpoints.start = .fetching(from: id, checkpoint, bases: [], bytes: 0, since: now, rebase: rebase)
        return [.send(id, .basesWanted(checkpoint: checkpoint.content.id, after: nil))]
    }

    /// A page of bases from the peer this log starts from: the next is
    /// asked for, and after the last the log starts (or moves onto them).
    mutating func receiveBases(
        _ page: [EntityBase], of checkpoint: [UInt8], last: Bool, from id: ConnectionID, now: Milliseconds
    ) -> [Effect] {
        guard case .fetching(let source, let offered, var bases, var bytes, let since, let rebase) = checkpoints.start,
            source == id, offered.content.id == checkpoint
        else { return [] }
        bases += page
        bytes += page.reduce(0) { $0 + $1.approximateSize }
        guard last else {
            // The peer sends the next page unasked.
            checkpoints.start = .fetching(from: id, offered, bases: bases, bytes: bytes, since: since, rebase: rebase)
            return []
        }
        let peer = sessions[id]?.peer?.replicaID ?? "?"
        guard UInt64(bases.count) == offered.content.entityCount else {
            // The peer moved on to another checkpoint while it sent them: its pages ended early.
            emit(
                LogRecord(
                    .info, .checkpointBasesWithdrawn, "the peer no longer serves the checkpoint's bases",
                    [
                        ("checkpoint", Hex.string(checkpoint)), ("peer", peer), ("bases", "\(bases.count)"),
                        ("entities", "\(offered.content.entityCount)"),
                    ]))
            checkpoints.offers = checkpoints.offers.filter { $0.value != offered }
            checkpoints.start = rebase ? .decided : .undecided(since: now - configuration.checkpointOfferWaitMs)
            return rebase ? takeNext() : decideStartIfDue(now: now)
        }
        if rebase, cursor.missingCount(from: offered.content.cursor) == 0 {
            // Other peers brought every event it covers while the bases came: the log takes it as any other.
            emit(
                LogRecord(
                    .info, .checkpointRebaseUnneeded, "caught up while the checkpoint's bases came: no move",
                    [("checkpoint", Hex.string(checkpoint)), ("peer", peer)]))
            checkpoints.start = .decided
            return takeNext()  // held back while the bases came
        }
        checkpoints.start = .starting(from: peer, offered, bytes: bytes, since: since, rebase: rebase)
        return [.startFromCheckpoint(offered, bases: bases, rebase: rebase)]
    }

    /// Storage answered `.startFromCheckpoint`: the log has its state (or
    /// replays the history after a failed start), and every session tells
    /// its cursor; after a move, every peer hears the new floor.
    public mutating func startedFromCheckpoint(
        _ outcome: Result<StartedFromCheckpoint, StorageFailure>, now: Milliseconds
    ) -> [Effect] {
        guard case .starting(let peer, let checkpoint, let bytes, let since, let rebase) = checkpoints.start else {
            return []
        }
        let id = Hex.string(checkpoint.content.id)
        var effects: [Effect] = []
        switch outcome {
        case .success(let started):
            forgetLocalState()
            _ = raiseCursor(to: started.cursor, now: now)
            var fields = [
                ("checkpoint", id), ("peer", peer), ("entities", "\(checkpoint.content.entityCount)"),
                ("bytes", "\(bytes)"), ("ms", "\(now - since)"),
            ]
            if rebase { fields.insert(("refolded", "\(started.refolded)"), at: 3) }
            emit(
                LogRecord(
                    .info, rebase ? .checkpointRebased : .checkpointStarted,
                    rebase
                        ? "moved onto a peer's checkpoint: it no longer holds events this log lacked"
                        : "started from a checkpoint", fields))
            checkpoints.floor = checkpoint.content
            if checkpoints.held?.content.id != checkpoint.content.id { effects += hold(checkpoint, now: now) }
            for session in sessions.keys { sessions[session]!.historyDropped(below: checkpoint.content.cursor) }
            // After a move the sessions go on: each hears the new cursor (after a start, each releases it).
            if rebase { effects += broadcastCursor(except: nil, now: now) }
            effects += tellFloor()
        case .failure(let failure):
            emit(
                LogRecord(
                    .warning, rebase ? .checkpointRebaseFailed : .checkpointStartFailed,
                    rebase
                        ? "cannot move onto the checkpoint; tried again later"
                        : "cannot start from the checkpoint; replaying the history",
                    [("checkpoint", id), ("peer", peer), ("error", failure.message)]))
        }
        return effects + settleStart(now: now) + takeNext()
    }

    /// An offer is at hand (a fetch from another peer was lost), or no
    /// offer is coming: every identified peer answered without one, or the
    /// wait is over.
    mutating func decideStartIfDue(now: Milliseconds) -> [Effect] {
        guard case .undecided(let since) = checkpoints.start else { return [] }
        if let (id, offer) = checkpoints.offers.sorted(by: { $0.key < $1.key }).first, sessions[id] != nil {
            return fetchBases(of: offer, from: id, now: now)
        }
        let identified = sessions.filter { $0.value.peer != nil }.keys
        let allAnswered = !identified.isEmpty && identified.allSatisfy { checkpoints.answered.contains($0) }
        guard allAnswered || since.map({ now - $0 >= configuration.checkpointOfferWaitMs }) ?? false else { return [] }
        return settleStart(now: now)
    }

    /// A connection is gone: what its peer showed is forgotten, and when
    /// bases came on it, another offer is tried (or the history replayed);
    /// a move onto a checkpoint is tried again at a later round.
    mutating func checkpointPeerLost(_ id: ConnectionID, now: Milliseconds) {
        checkpoints.offers[id] = nil
        checkpoints.answered.remove(id)
        checkpoints.peerChains[id] = nil
        checkpoints.peerHeld[id] = nil
        checkpoints.peerFloors[id] = nil
        guard case .fetching(let source, _, _, _, _, let rebase) = checkpoints.start, source == id else { return }
        checkpoints.start = rebase ? .decided : .undecided(since: now - configuration.checkpointOfferWaitMs)
    }

    /// The start is decided: every session that held its cursor tells it.
    mutating func settleStart(now: Milliseconds) -> [Effect] {
        checkpoints.start = .decided
        checkpoints.offers = [:]
        checkpoints.answered = []
        var effects: [Effect] = []
        for id in sessions.keys.sorted() where sessions[id]!.cursorHeld {
            effects += perform(sessions[id]!.releaseCursor(localCursor: cursor), on: id, now: now)
        }
        return effects
    }

    // MARK: - Moving onto a peer's checkpoint

    /// What a peer showed: the chain it folds from (its newest checkpoint
    /// last), or its floor.
    mutating func notePeerShowed(_ shown: [SignedCheckpoint], on id: ConnectionID) {
        guard let newest = shown.last else { return }
        checkpoints.peerHeld[id] = newest
        checkpoints.peerChains[id, default: []] += shown.map(\.content.id)
        if checkpoints.peerChains[id]!.count > Self.chainShown * 2 {
            checkpoints.peerChains[id]!.removeFirst(checkpoints.peerChains[id]!.count - Self.chainShown)
        }
    }

    /// A peer's floor arrived: this log may have to move onto its checkpoint.
    mutating func learnFloor(_ floor: VectorCursor, from id: ConnectionID, now: Milliseconds) -> [Effect] {
        checkpoints.peerFloors[id] = floor
        return rebaseIfBehind(now: now)
    }

    /// This log lacks events at or below a peer's floor, which that peer no
    /// longer holds: when the peer's checkpoint is trusted and extends the
    /// one this log folds from, the log moves onto it, asking the peer for
    /// its bases. Every replica that folds from that checkpoint shows the
    /// same state whether it holds the covered events or not (docs/storage.md
    /// "Checkpoints"), so moving loses nothing. While a take or a drop is
    /// out, or bases are being fetched, it waits.
    mutating func rebaseIfBehind(now: Milliseconds) -> [Effect] {
        guard case .decided = checkpoints.start, checkpoints.taking == nil, !checkpoints.dropping else { return [] }
        for id in checkpoints.peerFloors.keys.sorted() {
            guard sessions[id]?.peer != nil, let floor = checkpoints.peerFloors[id],
                floor.heads.contains(where: { cursor[$0.key] < $0.value }),
                let offered = checkpoints.peerHeld[id], isTrusted(offered),
                checkpoints.refused[Hex.string(offered.content.id)] == nil,
                checkpoints.held?.content.id != offered.content.id
            else { continue }
            if let held = checkpoints.held, !(checkpoints.peerChains[id] ?? []).contains(held.content.id) {
                continue  // another chain, or one too far ahead to tell
            }
            emit(
                LogRecord(
                    .info, .checkpointRebasing,
                    "a peer no longer holds events this log lacks: moving onto its checkpoint",
                    [
                        ("checkpoint", Hex.string(offered.content.id)),
                        ("peer", sessions[id]?.peer?.replicaID ?? "?"),
                        ("lacking", "\(cursor.missingCount(from: floor))"),
                    ]))
            return fetchBases(of: offered, from: id, rebase: true, now: now)
        }
        return []
    }

    /// This log's floor, to every peer that may read every feed (after a
    /// start, a move or a drop of history).
    func tellFloor() -> [Effect] {
        let floor = checkpoints.historyFloor
        guard !floor.heads.isEmpty else { return [] }
        return peersSeeingEveryFeed.map { .send($0, .historyFloor(floor)) }
    }
}

/// What a start from a checkpoint, or a move onto one, did.
public struct StartedFromCheckpoint: Equatable, Sendable {
    /// The log's cursor after it.
    public var cursor: VectorCursor
    /// Entities folded again on top of their bases (a move only).
    public var refolded: Int

    public init(cursor: VectorCursor, refolded: Int) {
        self.cursor = cursor
        self.refolded = refolded
    }
}
