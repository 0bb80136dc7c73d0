import Foundation
import Replica

/// The checks after healing, each on every replica's own file (but a
/// retired device's):
///
/// - it holds exactly the acknowledged events (count and cursor), and every
///   acknowledged event id is among them (read back page by page); with
///   checkpoints, less the events a retired device took with it, and a log
///   that does not hold its checkpoint's history (it dropped it, or
///   started from the checkpoint) may lack the events it covers;
/// - all state hashes are equal;
/// - no fork is quarantined and none was logged, since none was made;
/// - every item's sessions agree: the same holder (and claim), the same
///   claims with the same outcomes, the same requests with the same answers
///   (and whether each grant stood), and the same dropped tail, event for
///   event with the holder that dropped it.
struct ConvergenceCheck {
    let simulation: Simulation

    /// What sessions decided for one entity, as far as replicas must agree.
    struct SessionView: Hashable {
        var state: SessionState
        /// Every claim and grant, canonical order: its id and whether it stood.
        var claims: [Claim]
        /// Every request: its id, its answer's id, and whether a grant stood.
        var requests: [Request]
        /// The dropped tail: each event's id and the holder it fell to.
        var dropped: [Dropped]

        struct Claim: Hashable {
            var eventID: UUID
            var stood: Bool
        }

        struct Request: Hashable {
            var eventID: UUID
            var answerID: UUID?
            var grantStood: Bool?
        }

        struct Dropped: Hashable {
            var eventID: UUID
            var holder: String
        }

        init(_ session: EntitySession) {
            state = session.state
            claims = session.claims.map { Claim(eventID: $0.event.eventID, stood: $0.refusal == nil) }
            requests = session.requests.map {
                Request(eventID: $0.event.eventID, answerID: $0.answer?.eventID, grantStood: $0.grantStood)
            }
            dropped = session.dropped.map { Dropped(eventID: $0.event.eventID, holder: $0.holder) }
        }

        var description: String {
            let holder = state.holder.map { "held by \($0)\(state.granted ? " (granted)" : "")" } ?? "free"
            let tail = dropped.map { "\($0.eventID.uuidString.lowercased().prefix(8))@\($0.holder)" }
            let answered = requests.filter { $0.answerID != nil }.count
            let stood = claims.filter(\.stood).count
            return "\(holder), \(stood) of \(claims.count) claims stood, \(answered) of \(requests.count) requests "
                + "answered, dropped [\(tail.joined(separator: ", "))]"
        }
    }

    struct Outcome {
        var failures: [String]
        /// Events in the items' dropped tails, as the first replica holds them.
        var droppedEvents: Int
        /// The requests' answers, as the first replica holds them.
        var requests = RequestFigures()
    }

    /// How the claim requests were answered, over every item.
    struct RequestFigures {
        var grants = 0
        var refusals = 0
        var expired = 0
        var unanswered = 0
        /// Grants that did not stand in the fold.
        var overruled = 0

        mutating func count(_ session: EntitySession) {
            for request in session.requests {
                switch request.answer.flatMap({ SessionEvent.parse($0.payload) }) {
                case .claimGranted:
                    grants += 1
                    if request.grantStood == false { overruled += 1 }
                case .claimRefused(_, let holder):
                    if holder == nil { expired += 1 } else { refusals += 1 }
                default:
                    unanswered += 1
                }
            }
        }
    }

    func run() throws -> Outcome {
        var failures: [String] = []
        let ledger = simulation.ledger
        var hashes: [String: [String]] = [:]
        let items = simulation.workload.items.map(\.id)
        /// Per item: the replicas that show each view of its sessions.
        var sessions: [String: [SessionView: [String]]] = [:]
        var droppedEvents: Int?
        var requestFigures: RequestFigures?
        let survivors = simulation.survivors.filter { $0.incarnation > 0 }
        for replica in simulation.survivors where replica.incarnation == 0 {
            failures.append("\(replica.replicaID) never started")
        }
        let logs = try survivors.map { try $0.openForInspection(clock: simulation.clock) }
        let expected = simulation.expectedCursor(held: try logs.map { try $0.cursor() })
        let lostWithRetired = simulation.lostWithRetired(expected: expected)
        for (replica, log) in zip(survivors, logs) {
            let name = replica.replicaID
            let (required, allowed) = try simulation.expectedEvents(in: log, lost: lostWithRetired)
            let count = try log.eventCount()
            if required.count == allowed.count, count != Int64(allowed.count) {
                failures.append("\(name) holds \(count) events, \(allowed.count) were acknowledged")
            } else if count < Int64(required.count) || count > Int64(allowed.count) {
                failures.append(
                    "\(name) holds \(count) events, \(required.count)–\(allowed.count) were acknowledged and due")
            }
            let cursor = try log.cursor()
            if cursor != expected {
                failures.append(
                    "\(name) cursor lacks \(cursor.missingCount(from: expected)) acknowledged events "
                        + "and has \(expected.missingCount(from: cursor)) others")
            }
            let missing = required.subtracting(try heldEventIDs(of: log))
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
            var figures = RequestFigures()
            for item in items {
                let session = try log.session(entityType: Item.entityType, entityID: item)
                let view = SessionView(session)
                sessions[item, default: [:]][view, default: []].append(name)
                dropped += view.dropped.count
                figures.count(session)
            }
            if droppedEvents == nil { droppedEvents = dropped }
            if requestFigures == nil { requestFigures = figures }
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
        for report in simulation.logs.verificationReports.prefix(5) {
            failures.append("verification failed where nothing was altered: \(report)")
        }
        return Outcome(
            failures: failures, droppedEvents: droppedEvents ?? 0, requests: requestFigures ?? RequestFigures())
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
