import Replica
import SyncProtocol

/// Storage's answer to one of a node's storage effects, to hand back to
/// the node now or (in the simulator) later.
public enum StorageAnswer: Sendable {
    case eventsRead(ConnectionID, Result<EventPage, StorageFailure>)
    case stored(ConnectionID, Result<StoreOutcome, StorageFailure>)
    case stateComputed(Result<StateReport, StorageFailure>)
    case forksFound(Result<[ForkProof], StorageFailure>)
    case checkpointTaken(Result<TakenCheckpoint, StorageFailure>)
    case basesRead(ConnectionID, checkpoint: [UInt8], Result<[EntityBase]?, StorageFailure>)
    case startedFromCheckpoint(Result<StartedFromCheckpoint, StorageFailure>)
    case historyDropped(Result<DroppedHistory, StorageFailure>)

    /// Gives the answer to `node`; returns the effects that follow.
    public func deliver(to node: inout SyncNode, now: Milliseconds) -> [SyncNode.Effect] {
        switch self {
        case .eventsRead(let id, let page): node.eventsRead(page, on: id, now: now)
        case .stored(let id, let outcome): node.stored(outcome, on: id, now: now)
        case .stateComputed(let report): node.stateComputed(report, now: now)
        case .forksFound(let proofs): node.forksFound(proofs, now: now)
        case .checkpointTaken(let outcome): node.checkpointTaken(outcome, now: now)
        case .basesRead(let id, let checkpoint, let page): node.basesRead(page, of: checkpoint, on: id, now: now)
        case .startedFromCheckpoint(let outcome): node.startedFromCheckpoint(outcome, now: now)
        case .historyDropped(let outcome): node.historyDropped(outcome, now: now)
        }
    }

    /// The events a successful store stored.
    public var storedEvents: [StoredEvent] {
        if case .stored(_, .success(let done)) = self { return done.report.stored }
        return []
    }
}

/// Carries out a node's storage effects at once, on the caller's thread,
/// against one `EventLog`. For tests and the simulator, which run a node
/// without threads; a daemon uses `StorageExecutor`.
///
/// ```swift
/// var node = SyncNode(configuration: configuration, cursor: try log.cursor())
/// let network = DirectStorage.carryOut(node.tick(now: now), node: &node, log: log, now: now)
/// ```
public enum DirectStorage {
    /// Does the storage work of `effect` on `log` now; `nil` for a network
    /// effect, and for work that has no answer (`.writePendingProjections`).
    public static func execute(_ effect: SyncNode.Effect, on log: EventLog) -> StorageAnswer? {
        switch effect {
        case .send, .dial, .close, .revoked:
            return nil
        case .read(let id, let ranges, let maxEvents, let maxBytes):
            return .eventsRead(id, LogStorage.read(log, ranges: ranges, maxEvents: maxEvents, maxBytes: maxBytes))
        case .store(let id, let batches, let keys):
            return .stored(id, LogStorage.store(log, batches, keys: keys))
        case .quarantine(let proofs, let keys):
            _ = LogStorage.quarantine(log, proofs, keys: keys)
            return nil
        case .keepCertificates(let certificates):
            _ = LogStorage.keep(log, certificates)
            return nil
        case .compareHeads(let heads, let keys):
            return .forksFound(LogStorage.compare(log, heads, keys: keys))
        case .computeState:
            return .stateComputed(LogStorage.computeState(log))
        case .writePendingProjections:
            _ = LogStorage.writePendingProjections(log)
            return nil
        case .takeCheckpoint(let checkpoint):
            return .checkpointTaken(LogStorage.take(log, checkpoint))
        case .readBases(let id, let checkpoint, let after, let limit, let maxBytes):
            return .basesRead(
                id, checkpoint: checkpoint,
                LogStorage.readBases(log, checkpoint: checkpoint, after: after, limit: limit, maxBytes: maxBytes))
        case .startFromCheckpoint(let checkpoint, let bases, let rebase):
            return .startedFromCheckpoint(LogStorage.start(log, checkpoint, bases: bases, rebase: rebase))
        case .keepAcks(let acks):
            _ = LogStorage.keep(log, acks)
            return nil
        case .dropHistory(let checkpoint):
            return .historyDropped(LogStorage.dropHistory(log, checkpoint: checkpoint))
        }
    }

    /// True for every effect but `.send`, `.dial`, `.close` and `.revoked`.
    public static func isStorageWork(_ effect: SyncNode.Effect) -> Bool {
        switch effect {
        case .send, .dial, .close, .revoked: false
        case .read, .store, .computeState, .writePendingProjections, .quarantine, .compareHeads, .keepCertificates,
            .takeCheckpoint, .readBases, .startFromCheckpoint, .keepAcks, .dropHistory:
            true
        }
    }

    /// `effects` with every storage effect carried out and answered at once
    /// (the answers' own effects in its place, recursively); only `.send`,
    /// `.dial` and `.close` remain, in order.
    public static func carryOut(
        _ effects: [SyncNode.Effect], node: inout SyncNode, log: EventLog, now: Milliseconds,
        stored: ([StoredEvent]) -> Void = { _ in }
    ) -> [SyncNode.Effect] {
        var network: [SyncNode.Effect] = []
        var queue = effects[...]
        while let effect = queue.popFirst() {
            guard isStorageWork(effect) else {
                network.append(effect)
                continue
            }
            guard let answer = execute(effect, on: log) else { continue }
            let events = answer.storedEvents
            if !events.isEmpty { stored(events) }
            queue.insert(contentsOf: answer.deliver(to: &node, now: now), at: queue.startIndex)
        }
        return network
    }
}
