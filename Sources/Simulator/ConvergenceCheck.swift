import Foundation
import Replica

/// The checks after healing, each on every replica's own file:
///
/// - it holds exactly the acknowledged events (count and cursor), and every
///   acknowledged event id is among them (read back page by page);
/// - all state hashes are equal;
/// - no fork is quarantined and none was logged, since none was made;
/// - every item's sessions agree: the same holder (and claim) and the same
///   dropped tail, event for event with the holder that dropped it.
struct ConvergenceCheck {
    let simulation: Simulation

    /// What sessions decided for one entity, as far as replicas must agree.
    struct SessionView: Hashable {
        var state: SessionState
        /// The dropped tail: each event's id and the holder it fell to.
        var dropped: [Dropped]

        struct Dropped: Hashable {
            var eventID: UUID
            var holder: String
        }

        init(_ session: EntitySession) {
            state = session.state
            dropped = session.dropped.map { Dropped(eventID: $0.event.eventID, holder: $0.holder) }
        }

        var description: String {
            let holder = state.holder.map { "held by \($0)\(state.granted ? " (granted)" : "")" } ?? "free"
            let tail = dropped.map { "\($0.eventID.uuidString.lowercased().prefix(8))@\($0.holder)" }
            return "\(holder), dropped [\(tail.joined(separator: ", "))]"
        }
    }

    struct Outcome {
        var failures: [String]
        /// Events in the items' dropped tails, as the first replica holds them.
        var droppedEvents: Int
    }

    func run() throws -> Outcome {
        var failures: [String] = []
        let ledger = simulation.ledger
        var hashes: [String: [String]] = [:]
        let items = simulation.workload.items.map(\.id)
        /// Per item: the replicas that show each view of its sessions.
        var sessions: [String: [SessionView: [String]]] = [:]
        var droppedEvents: Int?
        for replica in simulation.replicas {
            let log = try replica.openForInspection(clock: simulation.clock)
            let name = replica.replicaID
            let count = try log.eventCount()
            if count != Int64(ledger.eventIDs.count) {
                failures.append("\(name) holds \(count) events, \(ledger.eventIDs.count) were acknowledged")
            }
            let cursor = try log.cursor()
            if cursor != ledger.expected {
                failures.append(
                    "\(name) cursor lacks \(cursor.missingCount(from: ledger.expected)) acknowledged events "
                        + "and has \(ledger.expected.missingCount(from: cursor)) others")
            }
            let missing = ledger.eventIDs.subtracting(try heldEventIDs(of: log))
            let lost = missing.filter { ledger.origins[$0] == name }
            if !lost.isEmpty {
                failures.append("\(name) lost \(lost.count) of its own acknowledged appends, e.g. \(sample(lost))")
            }
            if missing.count > lost.count {
                let others = missing.subtracting(lost)
                failures.append("\(name) lacks \(others.count) acknowledged events of others, e.g. \(sample(others))")
            }
            let forks = try log.forkCount()
            if forks != 0 { failures.append("\(name) quarantined \(forks) forks, none was made") }
            hashes[try log.stateHash(), default: []].append(name)
            var dropped = 0
            for item in items {
                let view = SessionView(try log.session(entityType: Item.entityType, entityID: item))
                sessions[item, default: [:]][view, default: []].append(name)
                dropped += view.dropped.count
            }
            if droppedEvents == nil { droppedEvents = dropped }
        }
        for item in items {
            guard let views = sessions[item], views.count > 1 else { continue }
            let groups = views.sorted { $0.value.first! < $1.value.first! }.map { "\($0.value): \($0.key.description)" }
            failures.append("sessions of item \(item) differ: \(groups.joined(separator: "; "))")
        }
        if hashes.count > 1 {
            let groups = hashes.sorted { $0.key < $1.key }.map { "\($0.key.prefix(12)): \($0.value)" }
            failures.append("state hashes differ: \(groups.joined(separator: "; "))")
        }
        for report in simulation.logs.forkReports.prefix(5) {
            failures.append("fork logged where none was made: \(report)")
        }
        return Outcome(failures: failures, droppedEvents: droppedEvents ?? 0)
    }

    private func sample(_ ids: Set<UUID>) -> String {
        ids.map { $0.uuidString.lowercased() }.sorted().prefix(3).joined(separator: ", ")
    }

    private func heldEventIDs(of log: EventLog) throws -> Set<UUID> {
        var held: Set<UUID> = []
        var offset: Int64 = 0
        while true {
            let page = try log.events(after: offset, limit: 500)
            guard let last = page.last else { return held }
            for stored in page { held.insert(stored.event.eventID) }
            offset = last.offset
        }
    }
}
