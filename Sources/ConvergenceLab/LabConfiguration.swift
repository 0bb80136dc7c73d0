import Foundation

/// A `peerd-lab` run as asked for (docs/lab.md, "Options").
public struct LabConfiguration: Sendable {
    public var peers: Int
    public var relays: Int
    public var durationMs: Int64
    public var seed: UInt64
    public var faults: [FaultKind]
    /// `--rate`: writes a second across all peer nodes.
    public var rate = LabConfiguration.defaultRate
    /// `--keep DIR`: the lab's work directory (every data directory and log) goes there and stays.
    public var keep: String?
    /// `--report DIR`; nil: `peerd-lab-SEED-TIME` in the current directory.
    public var report: String?
    /// How long the settle phase after the last heal may wait for convergence.
    public var settleMs: Int64 = 60_000
    /// `--plant divergence` (tests only): one event removed from one node's file while it is stopped.
    public var plantDivergence = false
    /// `netlab.sh`.
    public var netlab: String
    /// The `peerd` the hosts run.
    public var peerd: String
    /// `peerd-lab-link`, the delay fault's frame relay; nil when the faults include no delay.
    public var labLink: String?

    /// Writes a second unless `--rate` says otherwise.
    public static let defaultRate = 25

    public init(
        peers: Int, relays: Int, durationMs: Int64, seed: UInt64, faults: [FaultKind], netlab: String, peerd: String
    ) {
        self.peers = peers
        self.relays = relays
        self.durationMs = durationMs
        self.seed = seed
        self.faults = faults
        self.netlab = netlab
        self.peerd = peerd
    }

    /// `90s`, `2m`, `1500ms`, or a number of seconds, in milliseconds.
    public static func parseDuration(_ text: String, option: String) throws -> Int64 {
        let units: [(String, Double)] = [("ms", 1), ("s", 1_000), ("m", 60_000)]
        for (suffix, factor) in units where text.hasSuffix(suffix) {
            if let number = Double(text.dropLast(suffix.count)), number >= 0 { return Int64(number * factor) }
        }
        if let number = Double(text), number >= 0 { return Int64(number * 1_000) }
        throw LabUsageError("--\(option) must be a duration such as 90s, 2m or 1500ms, not \"\(text)\"")
    }
}
