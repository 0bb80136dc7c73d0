import Gossip
import SyncProtocol

/// What a checkpoint run does beside its workload (docs/testing.md
/// "Checkpoints in the simulator"): checkpoints made mid-run, forming a
/// chain; a device retired for good; a fresh replica that joins late and
/// may start from a checkpoint; late edits of items deleted before a
/// checkpoint, by a replica whose clock is more than a day behind; and a
/// retention that drops the covered history as soon as every member
/// acknowledged it.
///
/// ```swift
/// let report = try Simulation(scenario: .checkpoints(seed: 3)).run()
/// #expect(report.passed, "\(report.failureMessage)")
/// print(report.checkpoints!.summary)
/// ```
public struct CheckpointPlan: Sendable, Hashable {
    /// When checkpoints are made, in order: the first by a running
    /// replica, each later one by a running replica that folds from the one
    /// before (so they form a chain), never by the device to be retired;
    /// postponed by `retryMs` while no running replica can, and left out
    /// once the fault phase is over.
    public var madeAtMs: [Milliseconds]
    /// The device retired at `retireAtMs`: crashed then and never started
    /// again, and retired on every running replica (`SyncNode.retire`) and
    /// on each one started later (`Configuration.retired`, as `DIR/retired`
    /// configures `peerd run`).
    public var retired: Int
    public var retireAtMs: Milliseconds
    /// The replica that starts only at `joinAtMs`, with an empty log and
    /// `startsFromCheckpoints`; before then no fault touches it.
    public var fresh: Int
    public var joinAtMs: Milliseconds
    /// The replica whose clock is more than a day behind, so its events
    /// sort before every other replica's (the hybrid clock ignores times
    /// further ahead than a day); at `lateEditsAtMs` it edits items that
    /// were deleted before a checkpoint.
    public var lateEditor: Int
    public var lateEditsAtMs: [Milliseconds]
    /// Every replica's retention.
    public var retention = HistoryRetention.days(0)

    /// How long a checkpoint waits for a replica that folds from the one before.
    public static let retryMs: Milliseconds = 500
    /// How often running replicas are checked for a deleted item alive again.
    public static let probeEveryMs: Milliseconds = 1_000

    /// The command that replays one seed of the checkpoint sweep alone.
    public static func replayCommand(seed: UInt64) -> String {
        "PEERSYNC_SIM_CHECKPOINT_SEED=\(seed) swift test --filter CheckpointSweep"
    }

    /// One line that says what the plan does.
    public var summary: String {
        "checkpoints at \(madeAtMs) ms, sim-\(retired) retired at \(retireAtMs) ms, fresh sim-\(fresh) joins at "
            + "\(joinAtMs) ms, sim-\(lateEditor) edits late at \(lateEditsAtMs) ms, retention \(retention)"
    }
}

extension Scenario {
    /// The scenario of one seed of the checkpoint sweep: 4–6 replicas (the
    /// last one fresh) writing 100–200 events over a 10–14 s fault phase of
    /// random partitions, crashes and lossy links, one to three checkpoints,
    /// a retired device (in half the seeds the late editor, after its late
    /// edits), and clocks within a second of each other but for the late
    /// editor's (25–72 h behind) and, in a quarter of the seeds, one 1–12 h ahead.
    public static func checkpoints(seed: UInt64) -> Scenario {
        var random = SimulationRandom(seed: seed ^ 0xC4EC_0901_7000)
        var scenario = Scenario(seed: seed, replicaCount: random.int(in: 4...6))
        let regular = scenario.replicaCount - 1
        let phase = random.int(in: 10_000...14_000) as Milliseconds
        scenario.faultPhaseMs = phase
        // Healed and calm, a few seconds suffice: a run that needs more is stuck.
        scenario.settleLimitMs = 15_000
        scenario.conditions = .random(using: &random)
        scenario.faults = ScheduledFault.randomPlan(replicaCount: regular, phaseMs: phase, using: &random).map {
            fault in
            // The fresh replica is on a random side of each partition, and is otherwise left alone.
            guard case .partition(let groups) = fault.action else { return fault }
            return ScheduledFault(at: fault.at, .partition(groups: groups + [random.int(in: 0...groups.max()!)]))
        }
        scenario.clockSkewMs = (0..<scenario.replicaCount).map { _ in random.int(in: -1_000...1_000) }
        if random.chance(0.25) {
            scenario.clockSkewMs[random.int(in: 0..<regular)] = random.int(in: ClockSkew.hour...12 * ClockSkew.hour)
        }
        let lateEditor = random.int(in: 0..<regular)
        scenario.clockSkewMs[lateEditor] = -random.int(in: 25 * ClockSkew.hour...72 * ClockSkew.hour)
        scenario.appendCount = random.int(in: 100...200)
        scenario.secondScopeShare = random.chance(0.3) ? 0.2 : 0
        scenario.concurrentEditShare = random.double(in: 0.05...0.3)
        scenario.session.batchEvents = random.element(of: [3, 10, 2_000])
        scenario.session.window = random.int(in: 1...4)
        scenario.session.livePush = random.chance(0.5)
        scenario.peers.maxOutbound = random.int(in: 2...4)
        scenario.peers.rotateEveryMs = random.element(of: [nil, 5_000])
        scenario.storageDelayMs = random.element(of: [nil, 0...5, 1...40])

        let checkpointCount = random.element(of: [1, 1, 2, 2, 3])
        var made = [phase * Int64(random.int(in: 25...40)) / 100]
        for _ in 1..<checkpointCount {
            made.append(min(made.last! + phase * Int64(random.int(in: 12...20)) / 100, phase * 85 / 100))
        }
        let first = made[0]
        let retiresLateEditor = random.chance(0.5)
        let others = (0..<regular).filter { $0 != lateEditor }
        let retired = retiresLateEditor ? lateEditor : random.element(of: others)
        let retireAt = random.int(in: (first + 2_000)...(phase * 75 / 100))
        let lastLateEdit = retiresLateEditor ? retireAt - 200 : phase * 95 / 100
        let lateEdits = (0..<random.int(in: 3...8)).map { _ in random.int(in: (first + 300)...lastLateEdit) }
        scenario.checkpoints = CheckpointPlan(
            madeAtMs: made, retired: retired, retireAtMs: retireAt, fresh: regular,
            joinAtMs: random.int(in: (first + 1_000)...(phase * 90 / 100)), lateEditor: lateEditor,
            lateEditsAtMs: lateEdits.sorted())
        return scenario
    }
}
