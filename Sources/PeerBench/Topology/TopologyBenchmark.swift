import Foundation
import Simulator
import SyncProtocol

/// `peerd-bench topology`: what the hub saves against the mesh, in the
/// simulator (`TopologyExperiment`) and with real daemons on loopback
/// (`LoopbackTopology`), and how long the replicas take to fall back to the
/// mesh once the relay is killed. Prints Markdown tables.
struct TopologyBenchmark {
    let sizes: [Int]
    /// Live events each replica writes.
    let eventsPerReplica: Int
    /// Seed of the simulated runs.
    let seed: UInt64
    let simulatedOnly: Bool
    let peerd: String?
    let directory: String?

    func run() throws {
        try simulated()
        guard !simulatedOnly, let peerd else { return }
        let workspace = try Workspace(directory: directory)
        defer { workspace.finish() }
        progress("peerd-bench topology: work directory \(workspace.path), peerd at \(peerd)")
        try loopback(peerd: peerd, workspace: workspace)
    }

    private func simulated() throws {
        print("## Mesh and hub in the simulator")
        print("")
        print(
            "- the same replicas as a full mesh, and with one relay (`--topology auto`); calm network, seed "
                + "\(seed); after \(TopologyExperiment.warmUpMs / 1_000) s of virtual time every replica "
                + "appends \(eventsPerReplica) events, pushed live")
        print(
            "- bytes: sealed frames as the wire carries them, from the appends until every node holds every "
                + "event and its peers said so, per event")
        print("")
        print("| replicas | topology | connections | bytes per live event | messages per live event | virtual ms |")
        print("|---:|---|---:|---:|---:|---:|")
        for size in sizes {
            for topology in [Topology.mesh, .hub] {
                let result = try TopologyExperiment.run(
                    replicas: size, topology: topology, eventsPerReplica: eventsPerReplica, seed: seed)
                print(
                    "| \(size) | \(topology.rawValue) | \(result.connections) | "
                        + "\(Int(result.bytesPerLiveEvent.rounded())) | \(format(result.messagesPerLiveEvent, 1)) | "
                        + "\(result.convergenceMs) |")
                for failure in result.failures {
                    FileHandle.standardError.write(Data("n=\(size) \(topology): \(failure)\n".utf8))
                }
            }
        }
        print("")
    }

    private func loopback(peerd: String, workspace: Workspace) throws {
        var rows: [String] = []
        var fallbacks: [String] = []
        for size in sizes {
            for hub in [false, true] {
                progress("topology: \(size) replicas, \(hub ? "hub" : "mesh")")
                let figures = try LoopbackTopology(
                    replicas: size, hub: hub, eventsPerReplica: eventsPerReplica, peerd: peerd,
                    workspace: workspace
                ).measure()
                rows.append(
                    "| \(size) | \(hub ? "hub" : "mesh") | \(figures.connections) | "
                        + "\(Int(figures.bytesPerLiveEvent.rounded())) | \(Int(figures.idleBytesPerSecond.rounded())) | "
                        + "\(format(figures.spreadSeconds, 2)) |")
                if let fallback = figures.fallbackSeconds, let spread = figures.meshSpreadSeconds {
                    fallbacks.append("| \(size) | \(format(fallback, 2)) | \(format(spread, 2)) |")
                }
            }
        }
        print("## Mesh and hub with real daemons on 127.0.0.1")
        print("")
        print(
            "- mesh: `--topology mesh`, replica i is given every replica started before it and peer exchange "
                + "tells it the rest (at most 16 dials at once); hub: one `--relay`, every replica given only its "
                + "address (the others come by peer exchange)")
        print(
            "- connections from `GET /peers`; bytes are `peersync_bytes_sent_total` summed over every daemon: "
                + "per live event from the first of \(eventsPerReplica) writes per replica until every "
                + "daemon holds every event (idle traffic of that time included), and per second over 2 s idle")
        print("")
        print("| replicas | topology | connections | bytes per live event | idle bytes/s | write to all held (s) |")
        print("|---:|---|---:|---:|---:|---:|")
        rows.forEach { print($0) }
        print("")
        print("## Falling back to the mesh after kill -9 of the relay")
        print("")
        print(
            "- from SIGKILL until every replica's `GET /peers` says `mesh` (the fallback waits 3 s for a relay), "
                + "then from one write until every replica holds it")
        print("")
        print("| replicas | kill to mesh (s) | write to all held in the mesh (s) |")
        print("|---:|---:|---:|")
        fallbacks.forEach { print($0) }
    }

    private func format(_ value: Double, _ digits: Int) -> String {
        String(format: "%.\(digits)f", value)
    }
}
