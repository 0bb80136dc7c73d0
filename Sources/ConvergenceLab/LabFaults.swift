import ChildProcesses
import Foundation
import NetworkLab

/// Makes and heals the faults of a plan on a lab's hosts (docs/lab.md, "Faults").
struct LabFaults {
    let lab: NetLab
    let nodes: LabNodes
    let links: LabLinks

    /// Makes `fault` happen.
    func start(_ fault: LabPlan.Fault) async throws {
        switch fault.kind {
        case .partition:
            // A second bridge in the bridge namespace; the group's links move to it.
            try await ip(["-n", bridgeNamespace, "link", "add", "br1", "type", "bridge", "stp_state", "0"])
            try await ip(["-n", bridgeNamespace, "link", "set", "br1", "up"])
            for host in fault.hosts {
                try await ip(["-n", bridgeNamespace, "link", "set", port(of: host), "master", "br1"])
            }
        case .rate:
            try await ip([
                "netns", "exec", lab.namespace(of: fault.hosts[0]), "tc", "qdisc", "replace", "dev", "eth0", "root",
                "tbf",
                "rate", "\(fault.parameter)kbit", "burst", "32kbit", "latency", "400ms",
            ])
        case .delay:
            // vI leaves its bridge; the relay copies frames between it and dI, whose peer eI takes vI's place on
            // that bridge (br0, or br1 while the host is partitioned off).
            let host = fault.hosts[0]
            let bridge = try await bridge(of: "v\(host)")
            try await ip(["-n", bridgeNamespace, "link", "set", "v\(host)", "nomaster"])
            try await ip(["-n", bridgeNamespace, "link", "add", "d\(host)", "type", "veth", "peer", "name", "e\(host)"])
            try await ip(["-n", bridgeNamespace, "link", "set", "e\(host)", "master", bridge])
            try await ip(["-n", bridgeNamespace, "link", "set", "e\(host)", "up"])
            try await ip(["-n", bridgeNamespace, "link", "set", "d\(host)", "up"])
            try links.start(
                host: host, namespace: bridgeNamespace, between: ("v\(host)", "d\(host)"),
                delayMs: fault.parameter)
        case .loss:
            // `parameter` per mille of the packets the host receives or sends are dropped.
            try await nft(
                on: fault.hosts[0],
                """
                table inet \(Self.lossTable) {
                  chain input { type filter hook input priority 0; policy accept; numgen random mod 1000 < \(fault.parameter) drop; }
                  chain output { type filter hook output priority 0; policy accept; numgen random mod 1000 < \(fault.parameter) drop; }
                }
                """)
        case .kill:
            try await nodes.kill(fault.hosts[0])
        case .stop:
            try nodes.daemon(on: fault.hosts[0]).send(SIGSTOP)
        case .avahi:
            try await lab.avahiStop(fault.hosts[0], signal: "KILL")
        case .clock:
            try await nodes.restart(fault.hosts[0], clockOffsetMs: fault.parameter)
        }
    }

    /// Undoes `fault`.
    func heal(_ fault: LabPlan.Fault) async throws {
        switch fault.kind {
        case .partition:
            for host in fault.hosts {
                try await ip(["-n", bridgeNamespace, "link", "set", port(of: host), "master", "br0"])
            }
            try await ip(["-n", bridgeNamespace, "link", "del", "br1"])
        case .rate:
            try await ip([
                "netns", "exec", lab.namespace(of: fault.hosts[0]), "tc", "qdisc", "del", "dev", "eth0", "root",
            ])
        case .delay:
            let host = fault.hosts[0]
            let bridge = try await bridge(of: "e\(host)")
            try links.stop(host: host)
            try await ip(["-n", bridgeNamespace, "link", "del", "d\(host)"])
            try await ip(["-n", bridgeNamespace, "link", "set", "v\(host)", "master", bridge])
        case .loss:
            try await nft(on: fault.hosts[0], "delete table inet \(Self.lossTable)")
        case .kill:
            try await nodes.startDaemon(fault.hosts[0])
        case .stop:
            try nodes.daemon(on: fault.hosts[0]).send(SIGCONT)
        case .avahi:
            try await lab.avahiStart(fault.hosts[0])
        case .clock:
            try await nodes.restart(fault.hosts[0], clockOffsetMs: 0)
        }
    }

    private var bridgeNamespace: String { "\(lab.prefix)br" }

    /// The nftables table of a host's packet loss.
    private static let lossTable = "peerd_lab_loss"

    /// Runs the nftables `script` inside host `host`.
    private func nft(on host: Int, _ script: String) async throws {
        let file = lab.directory.appendingPathComponent("nft-\(host).nft")
        try Data((script + "\n").utf8).write(to: file)
        try await ip(["netns", "exec", lab.namespace(of: host), "nft", "-f", file.path])
    }

    /// Host `host`'s port on the bridges: `eI` while its link is delayed, else `vI`.
    private func port(of host: Int) -> String { links.isDelayed(host) ? "e\(host)" : "v\(host)" }

    /// The bridge (`br0` or `br1`) that `interface` of the bridge namespace is on.
    private func bridge(of interface: String) async throws -> String {
        let shown = try await ip(["-n", bridgeNamespace, "-o", "link", "show", "dev", interface])
        let words = shown.split(whereSeparator: \.isWhitespace)
        guard let index = words.firstIndex(of: "master"), index + 1 < words.count else {
            throw LabFailure("\(interface) in \(bridgeNamespace) is on no bridge: \(shown)")
        }
        return String(words[index + 1])
    }

    @discardableResult
    private func ip(_ arguments: [String]) async throws -> String {
        let result = try await ChildProcess.run(URL(fileURLWithPath: "/usr/sbin/ip"), arguments)
        guard result.status == 0 else { throw LabFailure("ip \(arguments.joined(separator: " ")): \(result)") }
        return result.stdout
    }
}
