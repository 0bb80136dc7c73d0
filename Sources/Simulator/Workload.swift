import Foundation
import Gossip
import Replica

/// The items the workload created so far (on any replica), so that edits,
/// deletes and undos can aim at items other replicas made.
struct WorkloadState {
    struct ItemReference {
        var id: String
        var scope: String
    }

    var items: [ItemReference] = []
    /// The claims the workload appended: which replica claimed which item.
    /// A concurrent claim, a takeover or a release elsewhere may have ended
    /// one already; a release here forgets the item's.
    var claims: [(item: ItemReference, replica: Int)] = []
    /// The `ticket` ids written so far, and the version of its declaration last declared.
    var tickets: [String] = []
    var declaredVersion: Int64 = 0
}

/// Every append that returned: what no replica may lose.
struct AcknowledgedAppends {
    private(set) var eventIDs: Set<UUID> = []
    /// The replica that appended each event.
    private(set) var origins: [UUID: String] = [:]
    /// Each event's feed and seq, to tell which events a checkpoint covers.
    private(set) var positions: [UUID: (feed: FeedID, seq: UInt64)] = [:]
    /// The cursor that holds exactly the acknowledged events.
    private(set) var expected = VectorCursor()

    /// Records an acknowledged append; says what is wrong when the log gave
    /// a seq that is not the next of its feed (an earlier append was lost).
    mutating func record(_ stored: StoredEvent) -> String? {
        let event = stored.event
        let next = expected[event.feed] + 1
        eventIDs.insert(event.eventID)
        origins[event.eventID] = event.feed.replicaID
        positions[event.eventID] = (event.feed, event.seq)
        expected[event.feed] = max(expected[event.feed], event.seq)
        guard event.seq == next else {
            return "append to \(event.feed) got seq \(event.seq) where \(next) was next: an acknowledged append is lost"
        }
        return nil
    }
}

/// The workload: random local appends during the fault phase.
extension Simulation {
    /// One step: create an item, edit one, edit one on several replicas at
    /// the same instant (rename against delete, quantity against undo), or,
    /// with `Scenario.claimShare`, claim, take over or release one.
    func performAppendStep() throws {
        // Not on an empty replica still deciding whether it starts from a checkpoint: a write would decide it.
        let running = replicas.filter { $0.node.map { !$0.isStartingFromCheckpoint } ?? false }
        guard !running.isEmpty else { return }
        // No draw without declared tickets or claims, so that a scenario without them replays as before.
        if scenario.declaredShare > 0, try performDeclaredStep(running: running) { return }
        if scenario.claimShare > 0, !workload.items.isEmpty, random.chance(scenario.claimShare) {
            performSessionStep(running: running)
        } else if workload.items.isEmpty || random.chance(0.25) {
            let number = workload.items.count + 1
            let item = WorkloadState.ItemReference(
                id: "item-\(number)", scope: random.chance(scenario.secondScopeShare) ? "tools" : FeedID.defaultScope)
            workload.items.append(item)
            let created = ItemEvent.created(name: "item \(number)", quantity: random.int(in: 0...100))
            append(NewEvent(item: item.id, created, scope: item.scope), on: random.element(of: running))
        } else if running.count >= 2 && random.chance(scenario.concurrentEditShare) {
            statistics.concurrentEdits += 1
            let item = random.element(of: workload.items)
            var writers = running
            writers.shuffle(using: &random)
            for writer in writers.prefix(random.int(in: 2...min(3, writers.count))) {
                edit(item, on: writer)
            }
        } else {
            edit(random.element(of: workload.items), on: random.element(of: running))
        }
    }

    /// An item of the replica's own, created at `Scenario.initialEventsAtMs`.
    func appendInitialEvent(on replica: SimulatedReplica) {
        let id = "seed-\(replica.index)-\(workload.items.count + 1)"
        workload.items.append(WorkloadState.ItemReference(id: id, scope: FeedID.defaultScope))
        append(NewEvent(item: id, .created(name: id, quantity: 1)), on: replica)
    }

    /// A claim (a third of them taking over whoever holds the item), while
    /// in half of them another replica, not told yet, edits the item in the
    /// same instant; or a release of an item the replica claimed; or an
    /// operator's forced release of an item someone claimed.
    private func performSessionStep(running: [SimulatedReplica]) {
        let replica = random.element(of: running)
        let own = workload.claims.filter { $0.replica == replica.index }
        switch random.int(in: 0..<10) {
        case 0..<6:
            // Half of them aim at an item someone claimed, so that claims meet.
            let item =
                !workload.claims.isEmpty && random.chance(0.5)
                ? random.element(of: workload.claims).item : random.element(of: workload.items)
            claim(item, on: replica, takeover: random.chance(1.0 / 3))
            let others = running.filter { $0.index != replica.index }
            if !others.isEmpty && random.chance(0.5) { edit(item, on: random.element(of: others)) }
        case 6..<9 where !own.isEmpty:
            release(random.element(of: own).item, on: replica, force: false)
        default:
            let item =
                workload.claims.isEmpty ? random.element(of: workload.items) : random.element(of: workload.claims).item
            release(item, on: replica, force: true)
        }
    }

    /// An optimistic claim, or, on a replica that reaches a relay, a request
    /// for a relay's grant (as the daemon's `ClaimDesk` decides).
    private func claim(_ item: WorkloadState.ItemReference, on replica: SimulatedReplica, takeover: Bool) {
        if reachesRelay(replica) {
            requestClaim(item, on: replica, takeover: takeover)
            return
        }
        acknowledge(on: replica) { log in
            let stored = try log.claim(
                entityType: Item.entityType, entityID: item.id, takeover: takeover, scope: item.scope)
            // Holding it already: the standing claim, nothing new.
            guard !ledger.eventIDs.contains(stored.event.eventID) else { return nil }
            statistics.claims += 1
            if case .claimed(let after) = SessionEvent.parse(stored.event.payload), after != nil {
                statistics.takeovers += 1
            }
            workload.claims.append((item, replica.index))
            return stored
        }
    }

    /// A `ClaimRequested`, unless the replica holds the item by a grant
    /// already (the daemon then answers with the standing grant).
    private func requestClaim(_ item: WorkloadState.ItemReference, on replica: SimulatedReplica, takeover: Bool) {
        acknowledge(on: replica) { log in
            let state = try log.session(entityType: Item.entityType, entityID: item.id).state
            if state.granted, state.holder == replica.replicaID { return nil }
            let stored = try log.requestClaim(
                entityType: Item.entityType, entityID: item.id, takeover: takeover, scope: item.scope)
            statistics.claimRequests += 1
            if let holder = state.holder, holder != replica.replicaID { statistics.takeovers += 1 }
            workload.claims.append((item, replica.index))
            return stored
        }
    }

    private func release(_ item: WorkloadState.ItemReference, on replica: SimulatedReplica, force: Bool) {
        acknowledge(on: replica) { log in
            let stored = try log.release(
                entityType: Item.entityType, entityID: item.id, force: force, scope: item.scope)
            if case .released(let forcedHolder) = SessionEvent.parse(stored.event.payload), forcedHolder != nil {
                statistics.forcedReleases += 1
            } else {
                statistics.releases += 1
            }
            workload.claims.removeAll { $0.item.id == item.id }
            return stored
        }
    }

    private func edit(_ item: WorkloadState.ItemReference, on replica: SimulatedReplica) {
        let event: ItemEvent
        switch random.int(in: 0..<20) {
        case 0..<5: event = .renamed(name: "name \(random.int(in: 0...999))")
        case 5..<11: event = .quantityChanged(quantity: random.int(in: 0...500))
        case 11..<15: event = .noteChanged(note: random.chance(0.25) ? nil : "note \(random.int(in: 0...999))")
        case 15..<17:
            statistics.deletes += 1
            event = .deleted
        default:
            undo(item, on: replica)
            return
        }
        append(NewEvent(item: item.id, event, scope: item.scope), on: replica)
    }

    /// Declares `ticket` when it is due (version 1 at the first step,
    /// version 2 at `Scenario.redeclareAtMs`), or writes a ticket event at
    /// the `Scenario.declaredShare`; false when the step is left to items.
    private func performDeclaredStep(running: [SimulatedReplica]) throws -> Bool {
        let due: Int64? =
            workload.declaredVersion == 0
            ? 1 : scenario.redeclareAtMs.flatMap { now >= $0 && workload.declaredVersion == 1 ? 2 : nil }
        if let version = due {
            workload.declaredVersion = version
            let declared = try DeclarationEvent(declarationJSON: try JSONValue.parse(Self.ticket(version: version)))
            acknowledge(on: random.element(of: running)) { log in
                do {
                    return try log.declare(declared, acceptRefold: true)
                } catch DeclarationRefusal.versionNotNewer {
                    return nil  // It holds this version already, from a peer.
                }
            }
            return true
        }
        guard random.chance(scenario.declaredShare) else { return false }
        let event: ItemEvent
        let id: String
        if workload.tickets.isEmpty || random.chance(0.25) {
            id = "ticket-\(workload.tickets.count + 1)"
            workload.tickets.append(id)
            event = .created(name: id, quantity: random.int(in: 0...100))
        } else {
            id = random.element(of: workload.tickets)
            event =
                random.chance(0.1)
                ? .deleted
                : random.chance(0.5)
                    ? .quantityChanged(quantity: random.int(in: 0...500))
                    : .renamed(name: "name \(random.int(in: 0...999))")
        }
        append(NewEvent(entityType: "ticket", entityID: id, payload: event.payload), on: random.element(of: running))
        return true
    }

    /// Item's twin as `ticket`; from version 2 `QuantityChanged` adds its quantity.
    static func ticket(version: Int64) -> String {
        let twin = DomainDeclaration.itemTwin(entityType: "ticket", version: version)
        guard version > 1 else { return twin }
        return
            twin.replacingOccurrences(
                of: #""effects":[{"set":"quantity","from":"quantity"}]"#,
                with: #""effects":[{"add":"quantity","from":"quantity"}]"#)
    }

    private func append(_ new: NewEvent, on replica: SimulatedReplica) {
        acknowledge(on: replica) { try $0.append(new) }
    }

    /// An undo of the item's newest event on this replica; refused when the
    /// replica holds nothing of the item yet or hit the undo limit.
    private func undo(_ item: WorkloadState.ItemReference, on replica: SimulatedReplica) {
        acknowledge(on: replica) { log in
            do {
                let stored = try log.undo(entityType: Item.entityType, entityID: item.id, scope: item.scope)
                statistics.undos += 1
                return stored
            } catch EventLogError.nothingToUndo, EventLogError.undoLimitReached {
                statistics.refusedUndos += 1
                return nil
            }
        }
    }

    /// Runs one append on the replica's log; when it returns, the event is
    /// acknowledged and the node is told. An append that sessions refuse
    /// (another writer holds the entity, as this replica knows) is expected:
    /// counted, not acknowledged, no failure.
    func acknowledge(on replica: SimulatedReplica, _ body: (EventLog) throws -> StoredEvent?) {
        guard let log = replica.log, replica.node != nil else { return }
        do {
            guard let stored = try body(log) else { return }
            statistics.appends += 1
            if scenario.tracksHops { hops.appended(stored.event, at: replica.index) }
            if let problem = ledger.record(stored) { failures.append("\(replica.replicaID): \(problem)") }
            perform(replica.node!.localChanged(cursor: try log.cursor(), now: now), by: replica.host)
        } catch EventLogError.entityHeld, EventLogError.takenOver, EventLogError.claimNeedsGrant,
            EventLogError.notHeld
        {
            statistics.refusedBySessions += 1
        } catch {
            failures.append("\(replica.replicaID): append failed: \(error)")
        }
    }
}
