import Foundation
import Gossip
import Replica
import SyncProtocol

/// The steps of `Scenario.checkpoints` (`CheckpointPlan`): checkpoints
/// made on a replica and given to its node, a device retired, a fresh
/// replica started late, late edits, and the checks made while the run
/// goes: every drop of history against every member's log, and every
/// replica that folds from a checkpoint against the items deleted before it.
extension Simulation {
    enum CheckpointStep {
        /// The next checkpoint of the chain.
        case make
        case retire
        case join
        case lateEdit
        /// Deleted items stay deleted; scheduled again every `CheckpointPlan.probeEveryMs`.
        case probe
    }

    /// What the checkpoint steps did so far.
    struct CheckpointRun {
        /// The checkpoints made, oldest first: one chain; and their ids.
        var made: [SignedCheckpoint] = []
        var madeIDs: [[UInt8]] = []
        /// Per checkpoint made: the items deleted in its maker's log then.
        var deleted: [[WorkloadState.ItemReference]] = []
        /// Per item deleted before a checkpoint: its earliest `Deleted` event's time.
        var deletionMs: [String: Int64] = [:]
        /// The retired devices (by index).
        var retired: Set<Int> = []
        /// Items found alive again, as `replica/item`, each reported once.
        var resurrections: Set<String> = []
        /// What the checks during the run found; kept apart from the run's
        /// failures so that the run goes on and shows what follows.
        var violations: [String] = []
        var figures = CheckpointFigures()
    }

    /// Every replica but the retired ones (a fresh one that has not joined yet included).
    var survivors: [SimulatedReplica] { replicas.filter { !checkpointRun.retired.contains($0.index) } }

    /// A replica that no fault starts: retired, or fresh and not joined yet.
    func isAbsent(_ index: Int) -> Bool {
        checkpointRun.retired.contains(index)
            || (scenario.checkpoints?.fresh == index && replicas[index].incarnation == 0)
    }

    /// The node settings of a checkpoint run: the plan's retention, a fresh
    /// replica that may start from a checkpoint, the devices retired so far,
    /// and the device's own clock for the node's wall clock (as `peerd run`
    /// gives it; the default open policy's clock reads 0).
    func configureCheckpoints(_ configuration: inout SyncNode.Configuration, of replica: SimulatedReplica) {
        guard let plan = scenario.checkpoints else { return }
        configuration.retention = plan.retention
        configuration.startsFromCheckpoints = replica.index == plan.fresh
        configuration.retired = Set(checkpointRun.retired.map { replicas[$0].replicaID })
        let wallClock = clock.wallClock(skewMs: replica.skewMs)
        configuration.session.trust = TrustPolicy(adminKey: nil, wallClockMs: { UInt64(max(0, wallClock())) })
    }

    /// The cursor every survivor must reach: the acknowledged events, but
    /// of a retired device's feeds only what some survivor holds (`held`).
    func expectedCursor(held cursors: [VectorCursor]) -> VectorCursor {
        var expected = ledger.expected
        let retired = Set(checkpointRun.retired.map { replicas[$0].replicaID })
        for feed in expected.feeds where retired.contains(feed.replicaID) {
            expected[feed] = min(expected[feed], cursors.map { $0[feed] }.max() ?? 0)
        }
        return expected
    }

    /// The acknowledged events no survivor holds: gone with a retired device.
    func lostWithRetired(expected: VectorCursor) -> Set<UUID> {
        guard !checkpointRun.retired.isEmpty else { return [] }
        return ledger.eventIDs.filter { id in
            let position = ledger.positions[id]!
            return position.seq > expected[position.feed]
        }
    }

    /// The events a survivor's log must hold and may hold: every
    /// acknowledged one not `lost`, less, when it does not hold its
    /// checkpoint's history, the ones the checkpoint covers.
    func expectedEvents(in log: EventLog, lost: Set<UUID>) throws -> (required: Set<UUID>, allowed: Set<UUID>) {
        let allowed = ledger.eventIDs.subtracting(lost)
        guard let held = try log.checkpoint(), !held.historyHeld else { return (allowed, allowed) }
        let floor = held.floorCursor
        let required = allowed.filter { id in
            let position = ledger.positions[id]!
            return position.seq > floor[position.feed]
        }
        return (required, allowed)
    }

    func scheduleCheckpointSteps() {
        guard let plan = scenario.checkpoints else { return }
        for at in plan.madeAtMs { queue.schedule(.checkpointStep(.make), at: at) }
        queue.schedule(.checkpointStep(.retire), at: plan.retireAtMs)
        queue.schedule(.checkpointStep(.join), at: plan.joinAtMs)
        for at in plan.lateEditsAtMs { queue.schedule(.checkpointStep(.lateEdit), at: at) }
        queue.schedule(.checkpointStep(.probe), at: plan.madeAtMs[0] + CheckpointPlan.probeEveryMs)
    }

    func perform(_ step: CheckpointStep) throws {
        guard let plan = scenario.checkpoints else { return }
        switch step {
        case .make:
            try makeCheckpoint()
        case .retire:
            retire(replicas[plan.retired])
        case .join:
            try start(replicas[plan.fresh])
            checkpointRun.figures.freshJoined += 1
            logs.note("sim-\(plan.fresh) joins, empty")
        case .lateEdit:
            try lateEdit(on: replicas[plan.lateEditor])
        case .probe:
            try probeDeletedItems()
            queue.schedule(.checkpointStep(.probe), at: now + CheckpointPlan.probeEveryMs)
        }
    }

    /// A running replica that folds from the newest checkpoint (none for the
    /// first), and is not the device to be retired, deletes an item, makes a
    /// checkpoint of its log, signs it as its maker, takes it and gives it
    /// to its node, as `peerd checkpoint make` beside a running daemon does.
    /// Postponed while no replica can.
    private func makeCheckpoint() throws {
        let newest = checkpointRun.made.last?.content.id
        let candidates = try survivors.filter { replica in
            guard replica.index != scenario.checkpoints?.retired, let log = replica.log, let node = replica.node,
                !node.isStartingFromCheckpoint
            else { return false }
            return try log.checkpoint()?.content.id == newest
        }
        guard !candidates.isEmpty else {
            if now + CheckpointPlan.retryMs < scenario.faultPhaseMs {
                queue.schedule(.checkpointStep(.make), at: now + CheckpointPlan.retryMs)
            } else {
                checkpointRun.figures.checkpointsNotMade += 1
            }
            return
        }
        let maker = random.element(of: candidates)
        let log = maker.log!
        let live = Set(try log.projections(Item.self).filter { !$0.deleted }.map(\.id))
        if let target = workload.items.filter({ live.contains($0.id) }).randomElement(using: &random) {
            acknowledge(on: maker) { try $0.append(NewEvent(item: target.id, .deleted, scope: target.scope)) }
        }
        let deleted = Set(try log.projections(Item.self).filter(\.deleted).map(\.id))
        let items = workload.items.filter { deleted.contains($0.id) }
        // Before the take: an entity's history lists only the events after the checkpoint it folds from.
        for item in items where checkpointRun.deletionMs[item.id] == nil {
            let deletions = try log.events(entityType: Item.entityType, entityID: item.id).filter {
                $0.event.payload.contains(#""type":"Deleted""#)
            }
            checkpointRun.deletionMs[item.id] = deletions.map(\.event.timeMs).min()
        }
        let signed = SignedCheckpoint.sign(try log.makeCheckpoint(), by: maker.identityKey, as: .maker)
        _ = try log.take(signed.content, statement: signed.bytes)
        checkpointRun.made.append(signed)
        checkpointRun.madeIDs.append(signed.content.id)
        checkpointRun.deleted.append(items)
        checkpointRun.figures.checkpointsMade += 1
        checkpointRun.figures.deletedBeforeCheckpoints += items.count
        logs.note(
            "\(maker.replicaID) makes checkpoint \(Hex.string(signed.content.id).prefix(12)) "
                + "(\(checkpointRun.made.count) of the chain, \(items.count) items deleted)")
        perform(maker.node!.checkpointGiven(signed, now: now), by: maker.host)
    }

    /// The device dies for good, and every running replica retires it.
    private func retire(_ device: SimulatedReplica) {
        guard checkpointRun.retired.insert(device.index).inserted else { return }
        if device.isUp {
            network.hostCrashed(device.host)
            device.crash()
        }
        checkpointRun.figures.retired += 1
        logs.note("\(device.replicaID) is retired")
        for replica in replicas where replica.isUp {
            perform(replica.node!.retire(device.replicaID, now: now), by: replica.host)
        }
    }

    /// The late editor, when it runs, edits an item deleted before a
    /// checkpoint; its clock is far behind, so the edit sorts before the deletion.
    private func lateEdit(on editor: SimulatedReplica) throws {
        let deleted = checkpointRun.deleted.joined()
        guard editor.isUp, let item = deleted.randomElement(using: &random) else { return }
        let event: ItemEvent =
            switch random.int(in: 0..<3) {
            case 0: .renamed(name: "late \(random.int(in: 0...999))")
            case 1: .quantityChanged(quantity: random.int(in: 0...500))
            default: .noteChanged(note: "late")
            }
        acknowledge(on: editor) { log in
            let stored = try log.append(NewEvent(item: item.id, event, scope: item.scope))
            checkpointRun.figures.lateEdits += 1
            if let deletion = checkpointRun.deletionMs[item.id], stored.event.timeMs < deletion {
                checkpointRun.figures.lateEditsBeforeDeletion += 1
            }
            return stored
        }
    }

    /// Every running replica that folds from a checkpoint shows each item
    /// deleted before it (or before an earlier one of the chain) deleted.
    private func probeDeletedItems() throws {
        for replica in survivors {
            guard let node = replica.node, let log = replica.log, let held = node.heldCheckpoint?.content.id,
                let position = checkpointRun.madeIDs.firstIndex(of: held)
            else { continue }
            for (index, items) in checkpointRun.deleted.enumerated().prefix(position + 1) {
                for item in items where try log.projection(Item.self, id: item.id)?.deleted != true {
                    guard checkpointRun.resurrections.insert("\(replica.replicaID)/\(item.id)").inserted else {
                        continue
                    }
                    checkpointRun.violations.append(
                        "\(item.id), deleted before checkpoint \(index + 1), is not deleted on \(replica.replicaID), "
                            + "which folds from checkpoint \(position + 1)")
                }
            }
        }
        checkpointRun.figures.probes += 1
    }

    /// A node is about to drop the history of `checkpoint`: it must see
    /// every member's acknowledgement, and every member it knows (but the
    /// retired, and an empty one still deciding how to start) must have
    /// taken the checkpoint, or a later one, in its own log. A replica it
    /// never heard of (one that met only a device retired since) may be
    /// behind: it moves onto the checkpoint once it meets a replica that
    /// dropped the history, and the convergence check proves it does.
    func checkHistoryDrop(of checkpoint: [UInt8], on replica: SimulatedReplica) {
        guard let node = replica.node else { return }
        checkpointRun.figures.dropsChecked += 1
        let name = "\(replica.replicaID) drops the history of checkpoint \(Hex.string(checkpoint).prefix(12))"
        let collection = node.historyCollection
        if collection.stage != .retained || !collection.blockers.isEmpty {
            checkpointRun.violations.append(
                "\(name) at stage \(collection.stage), blocked by \(collection.blockers.map(\.replica))")
        }
        for member in replicas
        where member.index != replica.index && member.incarnation > 0 && !checkpointRun.retired.contains(member.index)
            && node.members.contains(member.replicaID)
        {
            if member.node?.isStartingFromCheckpoint == true { continue }
            do {
                let log = try member.openForInspection(clock: clock)
                let statements = try log.checkpointStatements()
                guard !statements.contains(where: { (try? SignedCheckpoint(bytes: $0))?.content.id == checkpoint })
                else { continue }
                // One that folds from a later checkpoint (it started from it) needs none of these events either.
                if let covered = checkpointRun.made.first(where: { $0.content.id == checkpoint })?.content.cursor,
                    let held = try log.checkpoint(), held.content.cursor.missingCount(from: covered) == 0
                {
                    continue
                }
                checkpointRun.violations.append(
                    "\(name) while \(member.replicaID), a member it knows, has not taken it "
                        + "(acknowledged: \(collection.acknowledged))")
            } catch {
                checkpointRun.violations.append("\(name): cannot read \(member.replicaID)'s checkpoints: \(error)")
            }
        }
    }
}
