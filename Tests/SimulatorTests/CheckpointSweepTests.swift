import Foundation
import Simulator
import Testing

/// One checkpoint seed to replay, named in the environment:
/// `PEERSYNC_SIM_CHECKPOINT_SEED=<n> swift test --filter CheckpointSweep`,
/// with `PEERSYNC_SIM_TRACE=1` to print every node's log and every step.
enum CheckpointReplayRequest {
    static var seed: UInt64? {
        ProcessInfo.processInfo.environment["PEERSYNC_SIM_CHECKPOINT_SEED"].flatMap { UInt64($0) }
    }

    /// The sweep's first seed, `PEERSYNC_SIM_CHECKPOINT_FIRST_SEED` (0
    /// unless set): a wider search runs the sweep again from other seeds.
    static var firstSeed: UInt64 {
        ProcessInfo.processInfo.environment["PEERSYNC_SIM_CHECKPOINT_FIRST_SEED"].flatMap { UInt64($0) } ?? 0
    }
}

/// `Scenario.checkpoints` over 200 seeds (docs/testing.md "Checkpoints in
/// the simulator"): checkpoints and chains of them made mid-run under
/// partitions and crashes, a device retired, a fresh replica joining late,
/// late edits of deleted items, and history dropped as soon as every
/// member acknowledged.
@Suite("Checkpoint sweep")
struct CheckpointSweepTests {
    static let chunkCount = 10
    static let seedsPerChunk: UInt64 = 20
    /// Seeds `first + chunk * 20 ..< first + chunk * 20 + 20`: 200 seeds
    /// over 10 chunks that run in parallel.
    static func seeds(of chunk: Int) -> Range<UInt64> {
        let first = CheckpointReplayRequest.firstSeed + UInt64(chunk) * seedsPerChunk
        return first..<(first + seedsPerChunk)
    }

    @Test(
        "Every seed converges without resurrecting a deleted item or dropping history a member needs",
        .enabled(if: CheckpointReplayRequest.seed == nil, "PEERSYNC_SIM_CHECKPOINT_SEED names a single seed"),
        arguments: 0..<chunkCount)
    func sweep(chunk: Int) throws {
        var totals = SimulationStatistics()
        var figures = CheckpointFigures()
        let started = ContinuousClock.now
        var slowest = Duration.zero
        var failed: [UInt64] = []
        for seed in Self.seeds(of: chunk) {
            let runStarted = ContinuousClock.now
            let report = try Simulation(scenario: .checkpoints(seed: seed)).run()
            slowest = max(slowest, ContinuousClock.now - runStarted)
            if !report.passed {
                failed.append(seed)
                Issue.record("\(report.failureMessage)")
            }
            let run = try #require(report.checkpoints)
            #expect(run.checkpointsMade >= 1, "seed \(seed): no checkpoint was made")
            #expect(run.retired == 1 && run.freshJoined == 1, "seed \(seed): \(run.summary)")
            #expect(run.dropsChecked >= run.historyDrops, "seed \(seed): a drop went unchecked")
            totals.add(report.statistics)
            figures.add(run)
        }
        let perSeed = (ContinuousClock.now - started) / Int(Self.seedsPerChunk)
        print(
            "checkpoint sweep chunk \(chunk) (seeds \(Self.seeds(of: chunk)), \(perSeed) a seed, slowest \(slowest)): "
                + figures.summary)
        print("checkpoint sweep chunk \(chunk): \(totals.summary)")
        print("checkpoint sweep chunk \(chunk): \(failed.count) seeds failed: \(failed)")
        // What the sweep is for happened: a sweep where it silently did not would prove nothing.
        #expect(figures.chains > 0, "no run made a chain of checkpoints")
        #expect(figures.historyDrops > 0, "no replica dropped history")
        #expect(figures.freshStartedFromCheckpoint > 0, "no fresh replica started from a checkpoint")
        #expect(figures.lateEditsBeforeDeletion > 0, "no late edit sorted before its item's deletion")
        #expect(figures.deletedBeforeCheckpoints >= figures.checkpointsMade, "a checkpoint covered no deletion")
        #expect(totals.partitions > 0 && totals.crashes > 0, "\(totals.summary)")
        #expect(totals.network.drops > 0 && totals.network.channelBreaks > 0, "\(totals.summary)")
    }

    @Test(
        "A checkpoint seed replays exactly: the same messages, figures and state",
        .enabled(if: CheckpointReplayRequest.seed == nil, "PEERSYNC_SIM_CHECKPOINT_SEED names a single seed"))
    func sameSeedSameRun() throws {
        // Seed 7: a chain of two checkpoints, five drops of history, a fresh replica started from one.
        let first = try Simulation(scenario: .checkpoints(seed: 7)).run()
        let second = try Simulation(scenario: .checkpoints(seed: 7)).run()
        let figures = try #require(first.checkpoints)
        #expect(
            figures.checkpointsMade > 1 && figures.historyDrops > 0 && figures.freshStartedFromCheckpoint == 1,
            "\(figures.summary)")
        #expect(first.statistics == second.statistics)
        #expect(figures == second.checkpoints)
        #expect(first.stateHash == second.stateHash && first.convergedAtMs == second.convergedAtMs)
        #expect(first.failures == second.failures)
    }

    @Test(
        "The seed named by PEERSYNC_SIM_CHECKPOINT_SEED converges",
        .enabled(if: CheckpointReplayRequest.seed != nil, "set PEERSYNC_SIM_CHECKPOINT_SEED to replay one seed"))
    func replay() throws {
        var scenario = Scenario.checkpoints(seed: try #require(CheckpointReplayRequest.seed))
        scenario.trace = ReplayRequest.trace
        print(scenario.summary)
        let report = try Simulation(scenario: scenario).run()
        print(
            (report.convergedAtMs.map { "converged at \($0) ms" } ?? "did not converge") + ": "
                + report.statistics.summary)
        print(report.checkpoints?.summary ?? "no checkpoint figures")
        if !report.passed { Issue.record("\(report.failureMessage)") }
    }
}
