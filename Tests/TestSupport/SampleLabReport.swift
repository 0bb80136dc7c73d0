import LabReport

extension LabReport {
    /// A made-up report of a run with `nodes` peers and `relays` relays,
    /// the same every time: a partition of the lab in two, packet loss, a
    /// `kill -9`, a clock set ahead, a SIGSTOP and added delay on two nodes
    /// that are not neighbours, writes on every node about every 1.5 s
    /// (those of a killed node unacknowledged), a sample of every node's
    /// events each second (none while it is down), and four checks of
    /// which the fold check fails on `n3` when `failing`.
    ///
    /// ```swift
    /// let report = LabReport.sample()                // 5 nodes, one failed check
    /// let big = LabReport.sample(nodes: 20, relays: 2)
    /// ```
    public static func sample(nodes peers: Int = 5, relays: Int = 0, failing: Bool = true) -> LabReport {
        precondition(peers >= 5, "the sample's faults name n1…n5")
        let names = (1...peers).map { "n\($0)" } + (0..<relays).map { "r\($0 + 1)" }
        let lastHeal: Int64 = 62_000
        let elapsed: Int64 = 75_000
        let half = names.count / 2
        let faults = [
            Fault(
                kind: "partition", startMs: 8_000, endMs: 21_000, nodes: names,
                description: names[..<half].joined(separator: " ") + " | " + names[half...].joined(separator: " ")),
            Fault(kind: "loss", startMs: 24_000, endMs: 36_000, nodes: ["n3"], description: "30 % packet loss on n3"),
            Fault(kind: "kill", startMs: 30_000, endMs: 34_500, nodes: ["n4"], description: "kill -9 n4, restarted"),
            Fault(kind: "clock", startMs: 38_000, endMs: 56_000, nodes: ["n2"], description: "n2's clock 3 h ahead"),
            Fault(kind: "stop", startMs: 44_000, endMs: 49_000, nodes: ["n5"], description: "SIGSTOP n5, then SIGCONT"),
            Fault(
                kind: "delay", startMs: 50_000, endMs: lastHeal, nodes: ["n1", "n3"],
                description: "200 ms added delay on n1 and n3"),
        ]
        var writes: [Write] = []
        var random: UInt64 = 0x9E37_79B9_7F4A_7C15
        for (index, name) in names.enumerated() where name.hasPrefix("n") {
            var at = Int64(400 + 230 * index)
            while at < 58_000 {
                random = random &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                let kinds = ["create", "rename", "quantity", "note", "delete", "undo", "retry"]
                let down = name == "n4" && (30_000..<34_500).contains(at)
                writes.append(
                    Write(
                        node: name, atMs: at, kind: kinds[Int(random >> 33) % kinds.count],
                        item: "item-\(Int(random >> 40) % 40)", acknowledged: !down))
                at += 1_000 + Int64(random >> 54)
            }
        }
        let acknowledged = writes.filter(\.acknowledged)
        let partition = faults[0]
        /// When node `reader` holds the write: at once on its own node, 300 ms later elsewhere, after the partition
        /// heals when it parted the two.
        func heldAt(_ write: Write, by reader: Int) -> Int64 {
            let writer = names.firstIndex(of: write.node)!
            if writer == reader { return write.atMs }
            let parted = (writer < half) != (reader < half)
            if parted, (partition.startMs..<partition.endMs).contains(write.atMs) {
                return partition.endMs + 400 + Int64(reader) * 120
            }
            return write.atMs + 300
        }
        var samples: [Sample] = []
        for (index, name) in names.enumerated() {
            for at in stride(from: Int64(0), through: elapsed, by: 1_000) {
                if name == "n4", (30_000..<34_500).contains(at) { continue }
                let held = acknowledged.count { heldAt($0, by: index) <= at }
                samples.append(Sample(node: name, atMs: at, events: Int64(held)))
            }
        }
        let nodes = names.enumerated().map { index, name in
            let own = acknowledged.filter { $0.node == name }.count
            var cursor: [String: UInt64] = [:]
            for (other, otherName) in names.enumerated() where otherName.hasPrefix("n") {
                cursor[replicaID(other) + "/items"] = UInt64(acknowledged.count { $0.node == otherName })
            }
            return Node(
                name: name, host: index + 1, role: name.hasPrefix("r") ? "relay" : "peer", replicaID: replicaID(index),
                events: Int64(acknowledged.count), cursor: cursor,
                stateHash: "5f1c0a9e3b7d2c4481f6e0a2d9b3c7e15a4f8d2e6b0c9a7f3e1d5b8c2a4f6e90",
                convergedAfterHealMs: 380 + Int64(index * 97 % 900),
                bytesSent: 180_000 + Int64(own * 1_900 + index * 7_919),
                bytesReceived: 150_000 + Int64(index * 13_331), peakRSSBytes: 31_457_280 + Int64(index) * 1_153_434)
        }
        let converged = lastHeal + (nodes.compactMap(\.convergedAfterHealMs).max() ?? 0)
        let foldDetails = [
            "n3: item-7 quantity 4 in its projection, 5 in the fold of the union of all nodes' events",
            "n3: item-12 named \"Bolts\" in its projection, \"Nuts\" in the fold",
        ]
        let checks = [
            Check(name: "same vector cursor and state hash on every node", passed: true, details: []),
            Check(name: "every acknowledged write on every node", passed: true, details: []),
            Check(name: "projections equal an independent fold", passed: !failing, details: failing ? foldDetails : []),
            Check(name: "no fork reported where none was made", passed: true, details: []),
        ]
        return LabReport(
            configuration: Configuration(
                nodes: peers, relays: relays, durationMs: 60_000, seed: 42, faults: faults.map(\.kind)),
            startedAtMs: 1_796_126_400_000, elapsedMs: elapsed, lastHealMs: lastHeal, convergedAtMs: converged,
            nodes: nodes, faults: faults, writes: writes, samples: samples, checks: checks)
    }

    /// A replica id of 32 hex digits, different for each index.
    private static func replicaID(_ index: Int) -> String {
        let hex = String(UInt64(index + 1) &* 0x9E37_79B9_7F4A_7C15, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex + "00000000000000\(index < 10 ? "0" : "")\(index)"
    }
}
