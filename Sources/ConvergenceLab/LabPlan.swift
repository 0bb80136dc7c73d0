import Replica

/// What a lab run does and when, drawn from its seed alone: the fault
/// schedule and the workload. The same seed, node count and duration give
/// the same plan.
public struct LabPlan: Sendable, Equatable {
    /// One fault: from `startMs` until `endMs` (ms since the lab started its first daemon).
    public struct Fault: Sendable, Equatable {
        public var kind: FaultKind
        public var startMs: Int64
        public var endMs: Int64
        /// The hosts it hits (for a partition, the group cut off from the rest).
        public var hosts: [Int]
        /// The rate in kbit/s for `rate`, the loss per mille for `loss`, the delay each way in ms for `delay`, the
        /// clock offset in ms for `clock`, else 0.
        public var parameter: Int64
    }

    /// One write of the workload, sent to the HTTP API of node `node` (0-based among the peers).
    public struct Write: Sendable, Equatable {
        public enum Kind: String, Sendable, CaseIterable {
            case create, rename, quantity, note, delete, undo, retry
            /// `POST /entities/item/ID/claim` (docs/sessions.md), `{"takeover":true}` for a takeover.
            case claim, takeover
            /// `POST /entities/item/ID/release`.
            case release

            /// Whether a retry may repeat it: a repeated claim or release is no idempotent request.
            var isRetryable: Bool { ![.retry, .claim, .takeover, .release].contains(self) }
        }

        public var atMs: Int64
        public var node: Int
        public var kind: Kind
        /// The item: the index of the `create` that made it, among the plan's creates.
        public var slot: Int
        /// A quantity, or the number in a name or a note; for `retry` the index of the write it repeats.
        public var value: Int64
    }

    public var faults: [Fault]
    public var writes: [Write]

    /// The plan for `peers` peer nodes and `relays` relays (hosts `1...peers` are the peers, the relays follow),
    /// faults of `kinds` within `durationMs`, about `rate` writes a second.
    public static func make(
        seed: UInt64, peers: Int, relays: Int, durationMs: Int64, kinds: [FaultKind],
        rate: Int = LabConfiguration.defaultRate
    ) -> LabPlan {
        var random = SplitMix64(seed: seed)
        let faults = schedule(&random, peers: peers, relays: relays, durationMs: durationMs, kinds: kinds)
        var mix = WriteMix(peers: peers)
        let writes = mix.workload(&random, durationMs: durationMs, rate: rate)
        return LabPlan(faults: faults, writes: writes)
    }

    /// The last moment a fault is healed, or 0 without faults.
    public var lastHealMs: Int64 { faults.map(\.endMs).max() ?? 0 }

    private static func schedule(
        _ random: inout SplitMix64, peers: Int, relays: Int, durationMs: Int64, kinds: [FaultKind]
    ) -> [Fault] {
        guard !kinds.isEmpty, durationMs >= 5_000 else { return [] }
        let hosts = peers + relays
        var faults: [Fault] = []
        // Until when each host is taken by a fault of the same family.
        var daemonBusy = [Int64](repeating: 0, count: hosts + 1)
        var linkBusy = [Int64](repeating: 0, count: hosts + 1)
        var avahiBusy = [Int64](repeating: 0, count: hosts + 1)
        var partitionBusy: Int64 = 0
        var at: Int64 = 2_000
        let lastEnd = durationMs - 1_000
        while at + 1_000 < lastEnd {
            let kind = kinds[Int.random(in: 0..<kinds.count, using: &random)]
            let end = min(at + Int64.random(in: 2_000...8_000, using: &random), lastEnd)
            // Daemon faults hit peers only: a relay's restarts are not what the lab measures.
            let host = Int.random(in: 1...(kind.holdsDaemon ? peers : hosts), using: &random)
            var fault = Fault(kind: kind, startMs: at, endMs: end, hosts: [host], parameter: 0)
            switch kind {
            case .partition where partitionBusy <= at && hosts >= 2:
                let size = Int.random(in: 1...max(1, hosts / 2), using: &random)
                var group = Array(1...hosts)
                group.shuffle(using: &random)
                fault.hosts = group.prefix(size).sorted()
                partitionBusy = end
                faults.append(fault)
            case .rate, .delay, .loss:
                // One link fault per host at a time: kbit/s, ms each way, or packets lost per mille.
                guard linkBusy[host] <= at else { break }
                let choices: [Int64] =
                    switch kind {
                    case .rate: [64, 256, 1_024]
                    case .delay: [50, 150, 400]
                    default: [20, 50, 100]
                    }
                fault.parameter = choices[Int.random(in: 0..<3, using: &random)]
                linkBusy[host] = end
                faults.append(fault)
            case .avahi where avahiBusy[host] <= at:
                avahiBusy[host] = end
                faults.append(fault)
            case .kill, .stop, .clock:
                guard daemonBusy[host] <= at else { break }
                if kind == .clock {
                    let minutes = Int64.random(in: 1...30, using: &random)
                    fault.parameter = (Bool.random(using: &random) ? 1 : -1) * minutes * 60_000
                }
                daemonBusy[host] = end + 500
                faults.append(fault)
            default:
                break
            }
            at += Int64.random(in: 700...3_000, using: &random)
        }
        return faults
    }
}
