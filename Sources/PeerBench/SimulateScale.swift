import Foundation
import Simulator

/// `peerd-bench simulate-scale`: how many anti-entropy rounds meshes of
/// 8 to 256 simulated replicas need to converge when each dials at most
/// three peers, printed as a Markdown table.
struct SimulateScale {
    var sizes = [8, 16, 32, 64, 128, 256]
    var seed: UInt64 = 1
    var fanOut = 3
    var receptions = false
    /// With `--receptions`: how many replicas write (all when nil).
    var writers: Int?
    /// With `--receptions`: the peer manager's cap of connections per node (default 64).
    var maxConnections: Int?
    /// With `--receptions`: which of off and on to run.
    var pruningModes = [false, true]
    func run() throws {
        if receptions { return try runReceptions() }
        print("## Simulated convergence with bounded fan-out")
        print("")
        print(
            "- every replica knows every address and dials at most \(fanOut) of them (rotating every 10 s); "
                + "live push off, so events move at the cursor exchange every 1 s (a round) and on its acks")
        print(
            "- the mesh forms for \(ScaleExperiment.warmUpMs / 1_000) s of virtual time; then every replica "
                + "appends one event of its own; rounds, messages and hops count from then until all hold all")
        print("- hops: transfers an event needed to reach a replica (max and mean over every event at every replica)")
        print("- calm network, links of 1–20 ms, ticks at a random phase per node; seed \(seed)")
        print("")
        print(
            "| replicas | rounds to converge | log2(n) | rounds / log2(n) | messages per replica "
                + "| max hops | mean hops | virtual ms | run time |")
        print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        var failed = false
        for size in sizes {
            let start = Date()
            let result = try ScaleExperiment.run(replicas: size, seed: seed, maxOutbound: fanOut)
            let rounds = result.rounds.rounded(.up)
            let log2n = log2(Double(size))
            print(
                "| \(size) | \(format(rounds, 0)) | \(format(log2n, 0)) | \(format(rounds / log2n, 2)) "
                    + "| \(format(result.messagesPerReplica, 0)) | \(result.hops.maxHops) "
                    + "| \(format(result.hops.meanHops, 2)) | \(result.convergenceMs) "
                    + "| \(format(Date().timeIntervalSince(start), 1)) s |")
            for failure in result.failures {
                failed = true
                FileHandle.standardError.write(Data("n=\(size): \(failure)\n".utf8))
            }
        }
        if failed { exit(1) }
    }

    /// The receptions table: per size, pruning off then on, same seed.
    func runReceptions() throws {
        print("## Receptions per live event in a full mesh")
        print("")
        print(
            "- every replica dials every other; the mesh forms for \(PruningExperiment.warmUpMs / 1_000) s of "
                + "virtual time; then \(writers.map { "\($0)" } ?? "every") replica(s) append one event each, "
                + "twice, \(PruningExperiment.waveGapMs / 1_000) s apart")
        print(
            "- receptions: events in the batches every node received per event it stored from a peer, over "
                + "the second wave (the first sets the prunes up), then over both")
        print(
            "- calm network, links of 1–20 ms; seed \(seed); at most \(maxConnections ?? 64) connections per node "
                + "(a full mesh up to \((maxConnections ?? 64) + 1) replicas)")
        print("")
        print(
            "| replicas | pruning | receptions per event | with the first wave | prunes | grafts | converged in | run time |"
        )
        print("|---:|---|---:|---:|---:|---:|---:|---:|")
        var failed = false
        for size in sizes {
            for prunes in pruningModes {
                let start = Date()
                let result = try PruningExperiment.run(
                    replicas: size, prunesLinks: prunes, writers: writers.map { min($0, size) },
                    maxConnections: maxConnections, seed: seed)
                print(
                    "| \(size) | \(prunes ? "on" : "off") | \(format(result.receptionsPerEvent, 2)) "
                        + "| \(format(result.receptionsWithFirstWave, 2)) | \(result.prunes) | \(result.grafts) "
                        + "| \(result.convergenceMs) ms | \(format(Date().timeIntervalSince(start), 1)) s |")
                for failure in result.failures {
                    failed = true
                    FileHandle.standardError.write(Data("n=\(size): \(failure)\n".utf8))
                }
            }
        }
        if sizes.contains(16) { try runLostLink(replicas: 16, seeds: seed..<(seed + 10)) }
        if failed { exit(1) }
    }

    /// The lost tree link (`PruningExperiment.lostLink`) over several seeds.
    func runLostLink(replicas: Int, seeds: Range<UInt64>) throws {
        print("")
        print(
            "Lost tree link, \(replicas) replicas, pruning on: the link between replicas 0 and 1 is cut between "
                + "the waves; time from the measured wave until every node held every event, and grafts sent")
        print("")
        print("| seed | healed in | grafts |")
        print("|---:|---:|---:|")
        for seed in seeds {
            let result = try PruningExperiment.lostLink(replicas: replicas, seed: seed)
            let failure = result.failures.isEmpty ? "" : " (failed: \(result.failures.count) checks)"
            print("| \(seed) | \(result.convergenceMs) ms\(failure) | \(result.grafts) |")
        }
    }

    private func format(_ value: Double, _ decimals: Int) -> String {
        String(format: "%.\(decimals)f", value)
    }
}
