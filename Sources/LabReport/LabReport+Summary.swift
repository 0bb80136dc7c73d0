/// What the terminal table and the HTML report say about a run in a few
/// words, computed from the fields the runner fills.
extension LabReport {
    /// The checks that failed, in the report's order.
    public var failedChecks: [Check] { checks.filter { !$0.passed } }

    /// The verdict: `converged: every check passed`, or
    /// `NOT converged: 2 checks failed` (`no checks ran` when there were none).
    public var verdict: String {
        if passed { return "converged: every check passed" }
        if checks.isEmpty { return "NOT converged: no checks ran" }
        let failed = failedChecks.count
        return "NOT converged: \(failed) \(failed == 1 ? "check" : "checks") failed"
    }

    /// The command that replays this run's schedule and workload, e.g.
    /// `peerd-lab --nodes 5 --relays 1 --duration 90s --rate 25 --seed 42 --faults partition,kill`.
    public var replayCommand: String {
        let configuration = configuration
        var words = ["peerd-lab", "--nodes", "\(configuration.nodes)"]
        if configuration.relays > 0 { words += ["--relays", "\(configuration.relays)"] }
        let duration = configuration.durationMs
        words += ["--duration", duration % 1000 == 0 ? "\(duration / 1000)s" : "\(duration)ms"]
        if let rate = configuration.rate { words += ["--rate", "\(rate)"] }
        words += ["--seed", "\(configuration.seed)"]
        if !configuration.faults.isEmpty { words += ["--faults", configuration.faults.joined(separator: ",")] }
        return words.joined(separator: " ")
    }

    /// The writes the API acknowledged.
    public var acknowledgedWrites: Int { writes.count(where: \.acknowledged) }

    /// Each node's samples in time order, by node name.
    public var samplesByNode: [String: [Sample]] {
        Dictionary(grouping: samples, by: \.node).mapValues { $0.sorted { $0.atMs < $1.atMs } }
    }
}

extension LabReport.Node {
    /// The sum of the vector cursor's seqs: the events this node holds by its cursor.
    public var cursorTotal: UInt64 { cursor.values.reduce(0, +) }

    /// The cursor in a few characters: `Σ1234 in 5 feeds`.
    public var cursorSummary: String {
        "Σ\(Units.count(cursorTotal)) in \(cursor.count) \(cursor.count == 1 ? "feed" : "feeds")"
    }

    /// The first 8 characters of the state hash, enough to tell states apart at a glance.
    public var shortStateHash: String { String(stateHash.prefix(8)) }

    /// Time to converge after the last heal as people read it: `+1.24 s`, or `never`.
    public var convergedAfterHeal: String {
        convergedAfterHealMs.map { "+" + Units.duration($0) } ?? "never"
    }
}
