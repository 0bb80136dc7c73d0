import ChildProcesses
import Foundation

/// The daemons of one phase on 127.0.0.1: makes their data directories
/// with `peerd init` (or `--join` another's cluster code), starts them,
/// and stops them all, last started first.
final class LoopbackCluster {
    /// Names the directories and logs, e.g. `gossip`.
    let phase: String
    /// The `peerd` binary under test.
    let peerd: String
    private let directory: String
    private var started: [PeerProcess] = []

    init(phase: String, peerd: String, workspace: Workspace) throws {
        self.phase = phase
        self.peerd = peerd
        directory = (workspace.path as NSString).appendingPathComponent("shell-\(phase)")
        try? FileManager.default.removeItem(atPath: directory)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    /// Where the log of `name` goes.
    func logPath(_ name: String) -> String { (directory as NSString).appendingPathComponent("\(name).log") }

    /// A new data directory for `name`: a new cluster, or with `joining`
    /// the cluster of that data directory (through `peerd cluster-code` and `peerd init --join`).
    func initialize(_ name: String, joining other: String? = nil) throws -> String {
        let data = (directory as NSString).appendingPathComponent(name)
        let code = try other.map {
            try LoggedChild.run(peerd, ["cluster-code", "--data", $0]).trimmingCharacters(in: .whitespacesAndNewlines)
        }
        try LoggedChild.run(peerd, ["init", "--data", data] + (code.map { ["--join", $0] } ?? []))
        return data
    }

    /// Starts `peerd run` on `data`, dialing `peers`, with `extra` arguments.
    func start(
        _ name: String, data: String, peers: [PeerProcess] = [], descriptorLimit: Int? = nil, extra: [String] = []
    ) throws -> PeerProcess {
        let process = try PeerProcess(
            name: name, peerd: peerd, data: data, peers: peers.map(\.gossipPort), logPath: logPath(name),
            descriptorLimit: descriptorLimit, extra: extra)
        started.append(process)
        progress(
            "\(phase): \(name) runs (pid \(process.daemon.pid)), gossip 127.0.0.1:\(process.gossipPort), "
                + "http 127.0.0.1:\(process.api.port)")
        return process
    }

    /// Every daemon that is no longer running although nothing stopped it:
    /// `A killed by signal 9; its log ends: …`.
    func unexpectedExits() -> [String] {
        started.compactMap { process in
            process.exitDescription.map { how in
                "\(process.name) \(how) before the benchmark stopped it; its log ends: "
                    + Figure.logLine(process.daemon.logTail(lines: 1)[...])
            }
        }
    }

    /// True when a daemon died of SIGKILL, which the benchmark only sends
    /// in `stopAll`: something outside killed it (another session's
    /// cleanup, or the kernel's OOM killer), and the phase's figures are void.
    var killedFromOutside: Bool {
        started.contains {
            $0.daemon.child.termination == Termination(reason: .uncaughtSignal, status: SIGKILL)
        }
    }

    /// Stops every daemon it started, newest first.
    func stopAll() {
        for process in started.reversed() { process.daemon.stop() }
        started = []
    }
}

/// The highest and latest of a daemon's figures while something is held:
/// `/proc/<pid>/status` and `/proc/<pid>/fd`, sampled on every `note()`.
struct PeakWatch {
    let process: PeerProcess
    var threads = 0
    var residentMiB = 0.0
    var descriptors = 0
    /// `VmHWM` at the last sample.
    var highWaterMiB = Double.nan

    init(_ process: PeerProcess) {
        self.process = process
        note()
    }

    /// Samples the daemon now.
    mutating func note() {
        let stats = process.daemon.sample()
        threads = max(threads, stats.threads ?? 0)
        if stats.residentMiB.isFinite { residentMiB = max(residentMiB, stats.residentMiB) }
        if stats.peakMiB.isFinite { highWaterMiB = stats.peakMiB }
        descriptors = max(descriptors, process.openDescriptors ?? 0)
    }
}
