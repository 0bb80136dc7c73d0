import Foundation

/// A host's link made slow and lossy, with what this kernel offers (no `netem`: `../shared/NETLAB.md`,
/// "Link faults"): `tc tbf` shapes what the host sends, an nftables table drops a share of its packets.
///
/// ```swift
/// for host in 1...2 { try await lab.limitRate(of: host, to: "20mbit") }  // both directions
/// try await lab.dropAtRandom(on: 1, perHundredThousand: 500)            // 0.5 % each way
/// ```
extension NetLab {
    /// Shapes what host `host` sends on its `eth0` to `rate` (tc's units, e.g. `20mbit`) with a token bucket
    /// of `burst` and a queue of `latency`; replaces any root qdisc it had. Shape both hosts of a link to
    /// limit both directions.
    public func limitRate(of host: Int, to rate: String, burst: String = "32kbit", latency: String = "50ms")
        async throws
    {
        try await check(
            ["tc", "qdisc", "replace", "dev", "eth0", "root", "tbf", "rate", rate, "burst", burst, "latency", latency],
            on: host)
    }

    /// Drops `perHundredThousand` of every 100,000 packets host `host` receives, and as many of those it
    /// sends, at random (nftables table `inet netlab_loss`, replaced if it exists).
    public func dropAtRandom(on host: Int, perHundredThousand: Int) async throws {
        let file = directory.appendingPathComponent("loss-\(host).nft")
        let rule = "numgen random mod 100000 < \(perHundredThousand) drop;"
        let script = """
            table inet netlab_loss
            delete table inet netlab_loss
            table inet netlab_loss {
              chain input { type filter hook input priority 0; policy accept; \(rule) }
              chain output { type filter hook output priority 0; policy accept; \(rule) }
            }

            """
        try Data(script.utf8).write(to: file)
        try await check(["nft", "-f", file.path], on: host)
    }

    private func check(_ command: [String], on host: Int) async throws {
        let result = try await exec(host, command)
        guard result.status == 0 else {
            throw LabFailure("host \(host): \(command.joined(separator: " ")): \(result)")
        }
    }
}
