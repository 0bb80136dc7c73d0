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
}

/// Every append that returned: what no replica may lose.
struct AcknowledgedAppends {
    private(set) var eventIDs: Set<UUID> = []
    /// The replica that appended each event.
    private(set) var origins: [UUID: String] = [:]
    /// The cursor that holds exactly the acknowledged events.
    private(set) var expected = VectorCursor()

    /// Records an acknowledged append; says what is wrong when the log gave
    /// a seq that is not the next of its feed (an earlier append was lost).
    mutating func record(_ stored: StoredEvent) -> String? {
        let event = stored.event
        let next = expected[event.feed] + 1
        eventIDs.insert(event.eventID)
        origins[event.eventID] = event.feed.replicaID
        expected[event.feed] = max(expected[event.feed], event.seq)
        guard event.seq == next else {
            return "append to \(event.feed) got seq \(event.seq) where \(next) was next: an acknowledged append is lost"
        }
        return nil
    }
}

/// The workload: random local appends during the fault phase.
extension Simulation {
    /// One step: create an item, edit one, or edit one on several replicas
    /// at the same instant (rename against delete, quantity against undo).
    func performAppendStep() throws {
        let running = replicas.filter(\.isUp)
        guard !running.isEmpty else { return }
        if workload.items.isEmpty || random.chance(0.25) {
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
    /// acknowledged and the node is told.
    private func acknowledge(on replica: SimulatedReplica, _ body: (EventLog) throws -> StoredEvent?) {
        guard let log = replica.log, replica.node != nil else { return }
        do {
            guard let stored = try body(log) else { return }
            statistics.appends += 1
            if scenario.tracksHops { hops.appended(stored.event, at: replica.index) }
            if let problem = ledger.record(stored) { failures.append("\(replica.replicaID): \(problem)") }
            perform(replica.node!.localChanged(cursor: try log.cursor(), now: now), by: replica.host)
        } catch {
            failures.append("\(replica.replicaID): append failed: \(error)")
        }
    }
}
