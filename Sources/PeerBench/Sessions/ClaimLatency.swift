import DaemonClient
import Foundation

/// The claim phases of `peerd-bench sessions`: real daemons on loopback,
/// every request a fresh HTTP connection, each claim on an item of its own.
struct ClaimLatency {
    let claims: Int
    let peerd: String
    let workspace: Workspace

    struct Figures {
        var append: LatencySummary
        var optimistic: LatencySummary
        var granted: LatencySummary
    }

    func run() throws -> Figures {
        let cluster = try LoopbackCluster(phase: "sessions", peerd: peerd, workspace: workspace)
        defer { cluster.stopAll() }
        let alone = try cluster.start("alone", data: try cluster.initialize("alone"))
        let append = try time(claims) { _ in
            try alone.api.send("POST", "/items", body: #"{"name":"x","quantity":1}"#)
        }
        let optimistic = try time(claims) { index in
            try alone.api.send("POST", "/entities/match/m\(index)/claim")
        }
        let relayData = try cluster.initialize("relay")
        let relay = try cluster.start("relay", data: relayData, extra: ["--relay"])
        let peer = try cluster.start("peer", data: try cluster.initialize("peer", joining: relayData), peers: [relay])
        try waitForRelay(peer)
        let granted = try time(claims) { index in
            try peer.api.send("POST", "/entities/match/g\(index)/claim")
        }
        return Figures(append: append, optimistic: optimistic, granted: granted)
    }

    /// Times `count` requests; every one must answer 2xx (a claim: with the mode asked for).
    private func time(_ count: Int, _ request: (Int) throws -> HTTPReply) throws -> LatencySummary {
        var samples: [Duration] = []
        for index in 0..<count {
            var answer: HTTPReply?
            samples.append(try Stopwatch.time { answer = try request(index) })
            guard let answer, (200..<300).contains(answer.status) else {
                throw ProbeError.malformed("request \(index): \(answer?.statusLine ?? "no answer")")
            }
        }
        return LatencySummary(samples)
    }

    private func waitForRelay(_ peer: PeerProcess) throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            let peers = (try peer.api.json("/peers")["peers"] as? [[String: Any]]) ?? []
            if peers.contains(where: { $0["role"] as? String == "relay" && $0["state"] as? String == "connected" }) {
                return
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
        throw ProbeError.malformed("the peer did not connect to the relay within 30 s")
    }
}
