import ChildProcesses
import Foundation
import NetworkLab

/// Makes and heals the faults of a plan on a lab's hosts (docs/lab.md, "Faults").
struct LabFaults {
    let lab: NetLab
    let nodes: LabNodes

    /// Makes `fault` happen.
    func start(_ fault: LabPlan.Fault) async throws {
        switch fault.kind {
        case .partition:
            // A second bridge in the bridge namespace; the group's links move to it.
            try await ip(["-n", bridgeNamespace, "link", "add", "br1", "type", "bridge", "stp_state", "0"])
            try await ip(["-n", bridgeNamespace, "link", "set", "br1", "up"])
            for host in fault.hosts {
                try await ip(["-n", bridgeNamespace, "link", "set", "v\(host)", "master", "br1"])
            }
        case .rate:
            try await ip([
                "netns", "exec", lab.namespace(of: fault.hosts[0]), "tc", "qdisc", "replace", "dev", "eth0", "root",
                "tbf",
                "rate", "\(fault.parameter)kbit", "burst", "32kbit", "latency", "400ms",
            ])
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
                try await ip(["-n", bridgeNamespace, "link", "set", "v\(host)", "master", "br0"])
            }
            try await ip(["-n", bridgeNamespace, "link", "del", "br1"])
        case .rate:
            try await ip([
                "netns", "exec", lab.namespace(of: fault.hosts[0]), "tc", "qdisc", "del", "dev", "eth0", "root",
            ])
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

    private func ip(_ arguments: [String]) async throws {
        let result = try await ChildProcess.run(URL(fileURLWithPath: "/usr/sbin/ip"), arguments)
        guard result.status == 0 else { throw LabFailure("ip \(arguments.joined(separator: " ")): \(result)") }
    }
}
