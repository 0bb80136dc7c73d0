import Foundation
import Replica

/// The checks after healing, each on every replica's own file:
///
/// - it holds exactly the acknowledged events (count and cursor), and every
///   acknowledged event id is among them (read back page by page);
/// - all state hashes are equal;
/// - no fork is quarantined and none was logged, since none was made.
struct ConvergenceCheck {
    let simulation: Simulation

    func run() throws -> [String] {
        var failures: [String] = []
        let ledger = simulation.ledger
        var hashes: [String: [String]] = [:]
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
        }
        if hashes.count > 1 {
            let groups = hashes.sorted { $0.key < $1.key }.map { "\($0.key.prefix(12)): \($0.value)" }
            failures.append("state hashes differ: \(groups.joined(separator: "; "))")
        }
        for report in simulation.logs.forkReports.prefix(5) {
            failures.append("fork logged where none was made: \(report)")
        }
        return failures
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
