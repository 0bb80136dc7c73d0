import ConvergenceLab
import Replica
import Testing

/// The workload's mix as pure logic: its rate, the conflicts it makes on
/// purpose, and the sessions it keeps coherent (a takeover by another node
/// than the holder, a release by the holder, never more than three held).
struct WriteMixTests {
    static func writes(seed: UInt64, rate: Int, durationMs: Int64 = 60_000) -> [LabPlan.Write] {
        var random = SplitMix64(seed: seed)
        var mix = WriteMix(peers: 5)
        return mix.workload(&random, durationMs: durationMs, rate: rate)
    }

    @Test("about --rate writes a second across all nodes, within the duration, in time order")
    func rateIsKept() {
        for rate in [5, 25, 100] {
            let writes = Self.writes(seed: 3, rate: rate)
            let perSecond = Double(writes.count) / 59
            #expect(perSecond > Double(rate) * 0.8 && perSecond < Double(rate) * 1.2, "\(rate): \(perSecond)")
            #expect(writes.allSatisfy { $0.atMs >= 500 && $0.atMs < 59_500 })
            #expect(zip(writes, writes.dropFirst()).allSatisfy { $0.atMs <= $1.atMs })
        }
    }

    @Test("one item is edited on several nodes at once, deleted on one while edited on another, claimed twice at once")
    func conflictsOnPurpose() {
        let writes = Self.writes(seed: 9, rate: 25)
        let moments = Dictionary(grouping: writes, by: \.atMs).values.filter { Set($0.map(\.node)).count > 1 }
        let edits: Set<LabPlan.Write.Kind> = [.rename, .quantity, .note]
        #expect(
            moments.contains { group in
                group.allSatisfy { edits.contains($0.kind) } && Set(group.map(\.slot)).count == 1
            })
        #expect(
            moments.contains { group in
                group.contains { $0.kind == .delete } && group.contains { edits.contains($0.kind) }
            })
        #expect(moments.contains { group in group.filter { $0.kind == .claim }.count == 2 })
        #expect(
            moments.contains { group in
                group.contains { $0.kind == .undo } && group.contains { edits.contains($0.kind) }
            })
    }

    @Test("a takeover comes from another node than the planned holder, a release from the holder, three held at most")
    func sessionsStayCoherent() {
        var holders: [Int: Int] = [:]
        for write in Self.writes(seed: 4, rate: 50) {
            switch write.kind {
            case .claim:
                if holders[write.slot] == nil { holders[write.slot] = write.node }
            case .takeover:
                let holder = holders[write.slot]
                #expect(holder != nil && holder != write.node, "\(write)")
                holders[write.slot] = write.node
            case .release:
                #expect(holders[write.slot] != nil, "\(write)")
                holders[write.slot] = nil
            default:
                break
            }
            #expect(holders.count <= WriteMix.maximumHeld)
        }
    }

    @Test("the same random numbers give the same writes")
    func replayable() {
        #expect(Self.writes(seed: 1, rate: 25) == Self.writes(seed: 1, rate: 25))
        #expect(Self.writes(seed: 1, rate: 25) != Self.writes(seed: 2, rate: 25))
    }
}
