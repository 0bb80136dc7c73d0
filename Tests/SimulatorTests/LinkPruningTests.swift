import Simulator
import SyncProtocol
import Testing

/// Link pruning in simulated full meshes (`PruningExperiment`): each live
/// event reaches each node about once, the chain is as deep as before, and
/// a lost tree link heals through the pruned ones.
@Suite("Simulated link pruning")
struct LinkPruningTests {
    @Test("in a full mesh each live event reaches each node at most 1.1 times", arguments: [16])
    func receptionsPerEvent(replicas: Int) throws {
        let off = try PruningExperiment.run(replicas: replicas, prunesLinks: false, seed: 1)
        let on = try PruningExperiment.run(replicas: replicas, prunesLinks: true, seed: 1)
        print(
            "n=\(replicas): receptions per event off \(off.receptionsPerEvent) on \(on.receptionsPerEvent) "
                + "(with the first wave \(off.receptionsWithFirstWave) / \(on.receptionsWithFirstWave)), "
                + "prunes \(on.prunes), grafts \(on.grafts), convergence \(off.convergenceMs) / \(on.convergenceMs) ms")
        #expect(off.failures.isEmpty, "\(off.failures)")
        #expect(on.failures.isEmpty, "\(on.failures)")
        #expect(on.receptionsPerEvent <= 1.1, "\(on.receptionsPerEvent)")
        #expect(off.receptionsPerEvent > Double(replicas) / 2, "\(off.receptionsPerEvent)")
        #expect(on.convergenceMs <= off.convergenceMs + 50, "\(on.convergenceMs) vs \(off.convergenceMs)")
    }

    @Test("a chain needs as many hops with pruning as without")
    func chainHops() throws {
        let off = try PruningExperiment.chain(replicas: 8, prunesLinks: false, seed: 2)
        let on = try PruningExperiment.chain(replicas: 8, prunesLinks: true, seed: 2)
        print("chain of 8: hops off \(String(describing: off.hops)) on \(String(describing: on.hops))")
        #expect(off.failures.isEmpty && on.failures.isEmpty, "\(off.failures) \(on.failures)")
        #expect(off.hops?.maxHops == 7)
        #expect(on.hops == off.hops)
        // Nothing reaches a node twice in a chain, so nothing is lost and grafted.
        #expect(on.grafts == 0)
    }

    @Test("a lost tree link heals through the pruned links")
    func lostLinkHeals() throws {
        let result = try PruningExperiment.lostLink(replicas: 16, seed: 3)
        print("lost link, n=16: healed in \(result.convergenceMs) ms, grafts \(result.grafts)")
        #expect(result.failures.isEmpty, "\(result.failures)")
        #expect(result.grafts >= 1)
        #expect(result.convergenceMs <= 1_000, "\(result.convergenceMs)")
    }
}
