import Foundation
import Replica
import SyncProtocol

/// What the checkpoint steps of one run did (or, summed, of a sweep).
public struct CheckpointFigures: Sendable, Hashable {
    public var runs = 0
    public var checkpointsMade = 0
    /// Runs with a chain: more than one checkpoint made.
    public var chains = 0
    /// Checkpoints left out: no running replica folded from the one before
    /// before the fault phase ended.
    public var checkpointsNotMade = 0
    /// Items deleted in a checkpoint's maker's log when it was made.
    public var deletedBeforeCheckpoints = 0
    /// Edits of such items by the late editor, and of those the ones whose
    /// time sorts before the item's deletion.
    public var lateEdits = 0
    public var lateEditsBeforeDeletion = 0
    /// Times a node dropped history (`checkpoint.history_dropped` lines),
    /// the events dropped, and the runs in which any node did.
    public var historyDrops = 0
    public var eventsDropped = 0
    public var runsThatDroppedHistory = 0
    /// `.dropHistory` effects checked against every member's log.
    public var dropsChecked = 0
    public var retired = 0
    /// Checkpoints made on a device that was retired before any survivor took them.
    public var checkpointsLostWithRetired = 0
    /// Acknowledged events that only the retired device held.
    public var eventsLostWithRetired = 0
    public var freshJoined = 0
    /// Fresh replicas that started from a checkpoint (the others replayed the history).
    public var freshStartedFromCheckpoint = 0
    /// Moves onto a peer's checkpoint by a replica that lacked events no peer held any more.
    public var rebases = 0
    /// Times the running replicas were checked for deleted items alive again.
    public var probes = 0

    public init() {}

    /// Adds another run's figures to these.
    public mutating func add(_ other: CheckpointFigures) {
        runs += other.runs
        checkpointsMade += other.checkpointsMade
        chains += other.chains
        checkpointsNotMade += other.checkpointsNotMade
        deletedBeforeCheckpoints += other.deletedBeforeCheckpoints
        lateEdits += other.lateEdits
        lateEditsBeforeDeletion += other.lateEditsBeforeDeletion
        historyDrops += other.historyDrops
        eventsDropped += other.eventsDropped
        runsThatDroppedHistory += other.runsThatDroppedHistory
        dropsChecked += other.dropsChecked
        retired += other.retired
        checkpointsLostWithRetired += other.checkpointsLostWithRetired
        eventsLostWithRetired += other.eventsLostWithRetired
        freshJoined += other.freshJoined
        freshStartedFromCheckpoint += other.freshStartedFromCheckpoint
        rebases += other.rebases
        probes += other.probes
    }

    /// One line for a test log or the end of a sweep.
    public var summary: String {
        "\(runs) runs: checkpoints \(checkpointsMade) (\(chains) chains, \(checkpointsNotMade) not made), "
            + "deleted before them \(deletedBeforeCheckpoints), late edits \(lateEdits) "
            + "(\(lateEditsBeforeDeletion) sorting before the deletion), history drops \(historyDrops) "
            + "(\(eventsDropped) events, in \(runsThatDroppedHistory) runs, \(dropsChecked) checked), "
            + "retired \(retired) (\(eventsLostWithRetired) events and \(checkpointsLostWithRetired) checkpoints lost "
            + "with them), fresh \(freshJoined) "
            + "(\(freshStartedFromCheckpoint) started from a checkpoint), moves onto a checkpoint \(rebases), "
            + "probes \(probes)"
    }
}

/// The checks of a checkpoint run after healing, on every survivor (every
/// replica but the retired), beside `ConvergenceCheck`'s:
///
/// - no checkpoint was refused or failed to start from, anywhere, and no
///   storage work called its file damaged;
/// - every survivor's log and node fold from the newest checkpoint that
///   reached a survivor (one chain head; one made on a device retired
///   before it spread is lost with it), no node is still starting from
///   one, and every acknowledgement of it reached every node;
/// - every item deleted before a checkpoint is deleted everywhere;
/// - every survivor shows the same items, and its file passes
///   `checkIntegrity(refold: true)` (feeds without a gap after the
///   checkpoint, every projection a fresh fold);
/// - a replica that started from a checkpoint holds none of the events it
///   covers, and its log and node say that they do not hold its history.
struct CheckpointCheck {
    let simulation: Simulation

    struct Outcome {
        var failures: [String]
        var figures: CheckpointFigures
    }

    func run() throws -> Outcome {
        let run = simulation.checkpointRun
        let logs = simulation.logs
        var failures = run.violations.prefix(5).map { $0 }
        failures += logs.checkpointRefusals.prefix(5).map { "checkpoint refused in an honest run: \($0)" }
        failures += logs.damageReports.prefix(3).map { "storage called an undamaged file damaged: \($0)" }
        var figures = run.figures
        figures.runs = 1
        figures.chains = run.made.count > 1 ? 1 : 0
        figures.historyDrops = logs.historyDrops.count
        figures.eventsDropped = logs.historyDrops.reduce(0) { $0 + $1.events }
        figures.runsThatDroppedHistory = logs.historyDrops.isEmpty ? 0 : 1
        figures.rebases = logs.rebases.count
        let survivors = simulation.survivors.filter { $0.incarnation > 0 }
        let logsOfSurvivors = try survivors.map { try $0.openForInspection(clock: simulation.clock) }
        let taken = Set(
            try logsOfSurvivors.flatMap { try $0.checkpointStatements() }.compactMap {
                try? SignedCheckpoint(bytes: $0).content.id
            })
        figures.checkpointsLostWithRetired = run.made.filter { !taken.contains($0.content.id) }.count
        let head = run.made.last { taken.contains($0.content.id) }.map { Hex.string($0.content.id) }
        let expected = simulation.expectedCursor(held: try logsOfSurvivors.map { try $0.cursor() })
        figures.eventsLostWithRetired = simulation.lostWithRetired(expected: expected).count
        let survivorIDs = Set(survivors.map(\.replicaID))
        var items: [[Item]: [String]] = [:]
        for (replica, log) in zip(survivors, logsOfSurvivors) {
            let name = replica.replicaID
            let held = try log.checkpoint()
            if held.map({ Hex.string($0.content.id) }) != head {
                failures.append(
                    "\(name) folds from \(describe(held?.content.id)), the chain's head is \(head ?? "none")")
            }
            if let node = replica.node {
                if node.heldCheckpoint.map({ Hex.string($0.content.id) }) != head {
                    failures.append("\(name)'s node holds \(describe(node.heldCheckpoint?.content.id))")
                }
                for refused in node.refusedCheckpoints.prefix(3) {
                    failures.append("\(name) refused checkpoint \(refused.id) (\(refused.cause)): \(refused.detail)")
                }
                if node.isStartingFromCheckpoint { failures.append("\(name) is still starting from a checkpoint") }
                let missing = survivorIDs.subtracting(node.historyCollection.acknowledged)
                if head != nil, !missing.isEmpty {
                    failures.append("\(name) lacks the acknowledgements of \(missing.sorted())")
                }
            }
            let position = held.flatMap { held in run.made.firstIndex { $0.content.id == held.content.id } }
            for (index, deleted) in run.deleted.enumerated() where position.map({ index <= $0 }) ?? false {
                for item in deleted where try log.projection(Item.self, id: item.id)?.deleted != true {
                    failures.append("\(item.id), deleted before checkpoint \(index + 1), is not deleted on \(name)")
                }
            }
            let findings = try log.checkIntegrity(refold: true).findings
            for finding in findings.prefix(3) { failures.append("\(name) fails its integrity check: \(finding)") }
            items[try log.projections(Item.self), default: []].append(name)
            if let start = logs.checkpointStarts[name] {
                figures.freshStartedFromCheckpoint += 1
                failures += try startedFromCheckpoint(replica, log: log, start: start)
            }
        }
        if items.count > 1 {
            let groups = items.values.map { "\($0)" }.sorted()
            failures.append(
                "the survivors show \(items.count) different sets of items: \(groups.joined(separator: "; "))")
        }
        return Outcome(failures: failures, figures: figures)
    }

    /// The checks of a replica that started from the checkpoint `start` (hex id).
    private func startedFromCheckpoint(_ replica: SimulatedReplica, log: EventLog, start: String) throws -> [String] {
        let name = replica.replicaID
        var failures: [String] = []
        if try log.checkpoint()?.historyHeld != false {
            failures.append(
                "\(name) started from checkpoint \(start.prefix(12)), but its log says it holds the history")
        }
        if replica.node?.holdsCheckpointHistory != false {
            failures.append(
                "\(name) started from checkpoint \(start.prefix(12)), but its node says it holds the history")
        }
        guard let checkpoint = simulation.checkpointRun.made.first(where: { Hex.string($0.content.id) == start }) else {
            return failures + ["\(name) started from checkpoint \(start.prefix(12)), which no replica made"]
        }
        var covered = 0
        var offset: Int64 = 0
        while true {
            let page = try log.events(after: offset, limit: 500)
            guard let last = page.last else { break }
            covered += page.filter { checkpoint.content.covers($0.event) }.count
            offset = last.offset
        }
        if covered > 0 {
            failures.append("\(name) started from checkpoint \(start.prefix(12)) and holds \(covered) events it covers")
        }
        return failures
    }

    private func describe(_ id: [UInt8]?) -> String {
        id.map { "checkpoint \(Hex.string($0))" } ?? "no checkpoint"
    }
}
