import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// One size in one topology with real `peerd run` processes on 127.0.0.1.
struct LoopbackTopology {
    struct Figures {
        var connections: Int
        /// Bytes every daemon sent per second while nothing was written.
        var idleBytesPerSecond: Double
        /// Bytes every daemon sent from the first live write until every
        /// daemon held every event, per event (idle traffic of that time included).
        var bytesPerLiveEvent: Double
        /// From the first live write until every daemon held every event.
        var spreadSeconds: Double
        /// Hub only: from the relay's SIGKILL until every replica said `mesh` in `/peers`.
        var fallbackSeconds: Double?
        /// Hub only: from then until an event written on one replica reached every other.
        var meshSpreadSeconds: Double?
    }

    /// What a replica dials at most at once (`PeerManager.Configuration.maxOutbound`).
    static let maxOutbound = 16

    let replicas: Int
    let hub: Bool
    let eventsPerReplica: Int
    let peerd: String
    let workspace: Workspace

    func measure() throws -> Figures {
        let cluster = try LoopbackCluster(
            phase: "topology-\(hub ? "hub" : "mesh")-\(replicas)", peerd: peerd, workspace: workspace)
        defer { cluster.stopAll() }
        var nodes: [PeerProcess] = []
        var relay: PeerProcess?
        let first = try cluster.initialize(hub ? "relay" : "r1")
        if hub { relay = try cluster.start("relay", data: first, extra: ["--relay"]) }
        for index in 1...replicas {
            let name = "r\(index)"
            let data = index == 1 && !hub ? first : try cluster.initialize(name, joining: first)
            let peers = relay.map { [$0] } ?? nodes
            nodes.append(try cluster.start(name, data: data, peers: peers, extra: hub ? [] : ["--topology", "mesh"]))
        }
        let everyone = (relay.map { [$0] } ?? []) + nodes
        // Hub: one connection per replica. Mesh: each replica connected to
        // every other, or to at least as many as it dials at once, with the
        // count steady for a second (peer exchange may still add a few).
        // Either way every peer has reported its state hash.
        let least = hub ? 1 : min(replicas - 1, Self.maxOutbound)
        var connections = 0
        var steadySince = ContinuousClock.now
        try waitUntil("the \(hub ? "hub" : "mesh") forms", seconds: 90, pollMs: 50) {
            let tables = try everyone.map { try $0.api.json("/peers") }
            let count = tables.map(connected).reduce(0, +) / 2
            if count != connections { (connections, steadySince) = (count, .now) }
            let replicaTables = hub ? Array(tables.dropFirst()) : tables
            let formed = replicaTables.allSatisfy {
                connected($0) >= least && $0["topology"] as? String == (hub ? "hub" : "mesh")
            }
            // Settled: every session has reported its state, so the idle window below is idle.
            let settled = tables.allSatisfy { table in
                ((table["peers"] as? [[String: Any]]) ?? []).allSatisfy { peer in
                    peer["state"] as? String != "connected" || peer["state_hash"] != nil
                }
            }
            return formed && settled && (hub ? count == replicas : ContinuousClock.now - steadySince >= .seconds(1))
        }
        let idleStart = try bytesSent(everyone)
        let idleClock = ContinuousClock.now
        Thread.sleep(forTimeInterval: 2)  // a window to measure, not a wait for something
        let idleBytes = try bytesSent(everyone) - idleStart
        let idleBytesPerSecond = Double(idleBytes) / (ContinuousClock.now - idleClock).seconds

        let liveStart = try bytesSent(everyone)
        let liveClock = ContinuousClock.now
        for node in nodes {
            for number in 1...eventsPerReplica {
                try node.api.createItem("\(node.name) \(number)")
            }
        }
        let events = replicas * eventsPerReplica
        try waitUntil("every daemon holds every event", seconds: 60, pollMs: 50) {
            try everyone.allSatisfy { try $0.api.eventCount() == events }
        }
        let spreadSeconds = (ContinuousClock.now - liveClock).seconds
        let liveBytes = try bytesSent(everyone) - liveStart
        var figures = Figures(
            connections: connections, idleBytesPerSecond: idleBytesPerSecond,
            bytesPerLiveEvent: Double(liveBytes) / Double(events), spreadSeconds: spreadSeconds)
        if let relay {
            let killedAt = ContinuousClock.now
            _ = try relay.daemon.child.stop(with: SIGKILL)
            try waitUntil("every replica falls back to the mesh", seconds: 60, pollMs: 50) {
                try nodes.allSatisfy { try $0.api.json("/peers")["topology"] as? String == "mesh" }
            }
            figures.fallbackSeconds = (ContinuousClock.now - killedAt).seconds
            let writtenAt = ContinuousClock.now
            try nodes[0].api.createItem("after the relay")
            try waitUntil("the mesh spreads an event", seconds: 60, pollMs: 50) {
                try nodes.allSatisfy { try $0.api.eventCount() == events + 1 }
            }
            figures.meshSpreadSeconds = (ContinuousClock.now - writtenAt).seconds
        }
        return figures
    }

    /// Identified peers with an open connection in a `GET /peers` answer.
    private func connected(_ table: [String: Any]) -> Int {
        ((table["peers"] as? [[String: Any]]) ?? []).filter { $0["state"] as? String == "connected" }.count
    }

    /// `peersync_bytes_sent_total`, summed over `nodes`.
    private func bytesSent(_ nodes: [PeerProcess]) throws -> Int {
        try nodes.reduce(0) { $0 + Int(try $1.api.metric("peersync_bytes_sent_total")) }
    }
}
