import ConvergenceLab
import Testing

/// The lab's plan is a function of its seed: the same seed replays the same
/// faults and writes, another seed gives another plan, and every plan keeps
/// its own rules (faults healed within the duration, one daemon fault per
/// node at a time, edits of items that were created first).
struct LabPlanTests {
    static func plan(_ seed: UInt64, kinds: [FaultKind] = FaultKind.allCases) -> LabPlan {
        LabPlan.make(seed: seed, peers: 5, relays: 1, durationMs: 60_000, kinds: kinds)
    }

    @Test("the same seed gives the same schedule and workload; another seed another")
    func sameSeedSamePlan() {
        #expect(Self.plan(42) == Self.plan(42))
        #expect(Self.plan(42) != Self.plan(43))
        #expect(Self.plan(42).faults != Self.plan(43).faults)
    }

    @Test("faults start after the daemons, heal within the duration, and only of the kinds asked for")
    func faultsWithinDuration() {
        for seed: UInt64 in 1...20 {
            let plan = Self.plan(seed, kinds: [.partition, .kill])
            #expect(!plan.faults.isEmpty)
            for fault in plan.faults {
                #expect(fault.startMs >= 2_000 && fault.startMs < fault.endMs && fault.endMs <= 59_000, "\(fault)")
                #expect([.partition, .kill].contains(fault.kind))
                #expect(fault.hosts.allSatisfy { (1...6).contains($0) })
                if fault.kind == .kill { #expect(fault.hosts[0] <= 5, "never a relay") }
            }
            #expect(plan.lastHealMs == plan.faults.map(\.endMs).max())
        }
    }

    @Test("no two daemon faults hit one node at once, nor two link faults one link; partitions never overlap")
    func faultsDoNotCollide() {
        for seed: UInt64 in 1...20 {
            let plan = Self.plan(seed)
            let daemonFaults = plan.faults.filter { [.kill, .stop, .clock].contains($0.kind) }
            for (index, one) in daemonFaults.enumerated() {
                for other in daemonFaults[(index + 1)...] where other.hosts == one.hosts {
                    #expect(other.startMs >= one.endMs || one.startMs >= other.endMs, "\(one) \(other)")
                }
            }
            let partitions = plan.faults.filter { $0.kind == .partition }
            for (one, other) in zip(partitions, partitions.dropFirst()) { #expect(other.startMs >= one.endMs) }
            // A host's link carries one rate limit, packet loss or added delay at a time: a delay's relay and a
            // rate limit's qdisc or a loss's table would each see the other's effect.
            let linkFaults = plan.faults.filter { [.rate, .loss, .delay].contains($0.kind) }
            for (index, one) in linkFaults.enumerated() {
                for other in linkFaults[(index + 1)...] where other.hosts == one.hosts {
                    #expect(other.startMs >= one.endMs || one.startMs >= other.endMs, "\(one) \(other)")
                }
            }
            for loss in plan.faults where loss.kind == .loss { #expect([20, 50, 100].contains(loss.parameter)) }
            for delay in plan.faults where delay.kind == .delay { #expect([50, 150, 400].contains(delay.parameter)) }
        }
    }

    @Test("every kind of write occurs; edits name created items; retries repeat an earlier write of the same node")
    func workloadShape() {
        let plan = Self.plan(7)
        let kinds = Set(plan.writes.map(\.kind))
        #expect(kinds == Set(LabPlan.Write.Kind.allCases))
        var created = 0
        for (index, write) in plan.writes.enumerated() {
            #expect(write.node >= 0 && write.node < 5)
            switch write.kind {
            case .create:
                #expect(write.slot == created)
                created += 1
            case .retry:
                let original = plan.writes[Int(write.value)]
                #expect(Int(write.value) < index && original.node == write.node)
                #expect(![.retry, .claim, .takeover, .release].contains(original.kind), "\(original)")
            default:
                #expect(write.slot < created)
            }
        }
        let concurrent = Dictionary(grouping: plan.writes, by: \.atMs).values.filter { group in
            Set(group.map(\.node)).count > 1 && Set(group.map(\.slot)).count == 1
        }
        #expect(!concurrent.isEmpty, "some item is edited on several nodes at once")
    }

    @Test("--faults parses all and lists, and refuses unknown kinds")
    func faultList() throws {
        #expect(try FaultKind.parseList("all") == FaultKind.allCases)
        #expect(try FaultKind.parseList("kill,partition,kill") == [.kill, .partition])
        #expect(throws: LabUsageError.self) { try FaultKind.parseList("kill,netem") }
        #expect(try LabConfiguration.parseDuration("90s", option: "duration") == 90_000)
        #expect(try LabConfiguration.parseDuration("2m", option: "duration") == 120_000)
        #expect(try LabConfiguration.parseDuration("1500ms", option: "duration") == 1_500)
        #expect(throws: LabUsageError.self) { try LabConfiguration.parseDuration("soon", option: "duration") }
    }
}
