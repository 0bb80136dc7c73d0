import Foundation
import NetworkLab

/// The replicas of a lab run and the daemon each runs now: started,
/// killed, restarted (with a clock offset), as the faults say.
final class LabNodes {
    /// One replica: a peer (`n1`…) or a relay (`r1`…).
    struct Member {
        var node: LabNode
        var isRelay: Bool
        var role: String { isRelay ? "relay" : "peer" }
    }

    let lab: NetLab
    private(set) var members: [Member] = []
    private var daemons: [Int: LabDaemon] = [:]
    /// The most VmHWM any daemon of a host reported, in bytes.
    private(set) var peakRSS: [Int: Int64] = [:]

    init(lab: NetLab) { self.lab = lab }

    /// `peerd init` of every replica, one per host: the first makes the cluster, the others join it.
    func initialise(peers: Int, relays: Int) async throws {
        var code: String?
        for host in 1...(peers + relays) {
            let isRelay = host > peers
            let name = isRelay ? "r\(host - peers)" : "n\(host)"
            let (node, _) = try await lab.initNode(name, on: host, joining: code)
            if code == nil { code = try await lab.ok(["cluster-code"], node) }
            members.append(Member(node: node, isRelay: isRelay))
        }
    }

    func member(on host: Int) -> Member { members[host - 1] }

    func daemon(on host: Int) throws -> LabDaemon {
        guard let daemon = daemons[host] else { throw LabFailure("no daemon runs on host \(host)") }
        return daemon
    }

    /// Starts host `host`'s `peerd run`: mDNS only, no static peers; `--relay` for a relay.
    func startDaemon(_ host: Int, clockOffsetMs: Int64 = 0) async throws {
        var extra = member(on: host).isRelay ? ["--relay"] : []
        if clockOffsetMs != 0 { extra += ["--clock-offset-ms", "\(clockOffsetMs)"] }
        daemons[host] = try await lab.start(member(on: host).node, extra: extra)
    }

    /// `kill -9` of host `host`'s daemon.
    func kill(_ host: Int) async throws {
        let daemon = try daemon(on: host)
        notePeakRSS(host)
        try await lab.stop(daemon, signal: SIGKILL)
        daemons[host] = nil
    }

    /// Stops host `host`'s daemon with SIGTERM and starts it again, with `clockOffsetMs`.
    func restart(_ host: Int, clockOffsetMs: Int64) async throws {
        try await stop(host)
        try await startDaemon(host, clockOffsetMs: clockOffsetMs)
    }

    /// Stops host `host`'s daemon with SIGTERM (after SIGCONT, should it be stopped).
    func stop(_ host: Int) async throws {
        let daemon = try daemon(on: host)
        notePeakRSS(host)
        try? daemon.send(SIGCONT)
        try await lab.stop(daemon)
        daemons[host] = nil
    }

    /// Reads host `host`'s daemon's VmHWM (`/proc/PID/status`) into ``peakRSS``.
    func notePeakRSS(_ host: Int) {
        guard let daemon = daemons[host],
            let status = try? String(contentsOfFile: "/proc/\(daemon.pid)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
            let kilobytes = Int64(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
        else { return }
        peakRSS[host] = max(peakRSS[host] ?? 0, kilobytes * 1024)
    }
}
