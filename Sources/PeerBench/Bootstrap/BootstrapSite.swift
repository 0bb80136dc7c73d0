import ChildProcesses
import Foundation
import NetworkLab

/// A `peerd run` child as `peerd-bench bootstrap` sees it: its API, its
/// process and its log, wherever it runs.
struct BootstrapDaemon {
    let name: String
    /// Its data directory.
    let data: String
    let pid: Int32
    let api: ReplicaAPI
    /// Its log (standard error), one record a line.
    let logPath: String
    /// Whether the process still runs.
    let isRunning: () -> Bool

    /// Throws when the process is gone.
    func checkRunning() throws {
        guard isRunning() else {
            let tail = Self.lines(of: logPath).suffix(8).joined(separator: "\n")
            throw BenchmarkFailure(description: "\(name) ended during the measurement; its log ends:\n\(tail)")
        }
    }

    /// The complete lines of its log so far.
    var logLines: [String] { Self.lines(of: logPath) }

    /// Peak RSS (`VmHWM`) so far, in MiB.
    var peakMiB: Double { ChildStats(pid: pid).peakMiB }

    /// Bytes of its `replica.db` and its WAL now.
    var databaseBytes: (main: Int64, wal: Int64) {
        let path = (data as NSString).appendingPathComponent("replica.db")
        return (Workspace.fileSize(path), Workspace.fileSize(path + "-wal"))
    }

    private static func lines(of path: String) -> [String] {
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        lines.removeLast()  // an unfinished line, or empty after the final newline
        return lines
    }
}

/// Where the bootstrap's daemons run: on this machine's loopback, or on two
/// hosts of a netlab (A on host 1, the fresh replicas on host 2).
protocol BootstrapSite {
    /// How the report names the setup.
    var description: String { get }
    /// `peerd run` of the source A on `data`.
    func startSource(data: String) async throws -> BootstrapDaemon
    /// `peerd init --join CODE` of a fresh replica `name`; its data directory.
    func join(_ name: String, code: String) async throws -> String
    /// `peerd run` of a fresh replica on `data` dialing A, with `extra` arguments.
    func startFresh(_ name: String, data: String, extra: [String]) async throws -> BootstrapDaemon
    /// SIGTERM, and waits until it ended.
    func stop(_ daemon: BootstrapDaemon) async throws
}

/// Every daemon on 127.0.0.1 of this machine, both ports picked by the
/// kernel, `--no-mdns --log-level info` (``PeerProcess``).
final class LoopbackSite: BootstrapSite {
    let peerd: String
    let workspace: Workspace
    private var processes: [Int32: PeerProcess] = [:]
    private var sourcePort: UInt16?

    init(peerd: String, workspace: Workspace) {
        self.peerd = peerd
        self.workspace = workspace
    }

    var description: String { "loopback: every daemon on 127.0.0.1 (`--no-mdns --log-level info`)" }

    func startSource(data: String) async throws -> BootstrapDaemon {
        let process = try start("A", data: data, peers: [], extra: [])
        sourcePort = process.gossipPort
        return process.bootstrapDaemon
    }

    func join(_ name: String, code: String) async throws -> String {
        let data = workspace.file(name)
        workspace.discard(data)
        try LoggedChild.run(peerd, ["init", "--data", data, "--join", code])
        return data
    }

    func startFresh(_ name: String, data: String, extra: [String]) async throws -> BootstrapDaemon {
        guard let sourcePort else { throw BenchmarkFailure(description: "A is not running") }
        return try start(name, data: data, peers: [sourcePort], extra: extra).bootstrapDaemon
    }

    func stop(_ daemon: BootstrapDaemon) async throws {
        processes.removeValue(forKey: daemon.pid)?.daemon.stop()
    }

    /// Stops every daemon still running, newest first.
    func stopAll() {
        for process in processes.values.sorted(by: { $0.daemon.pid > $1.daemon.pid }) { process.daemon.stop() }
        processes = [:]
    }

    private func start(_ name: String, data: String, peers: [UInt16], extra: [String]) throws -> PeerProcess {
        let process = try PeerProcess(
            name: name, peerd: peerd, data: data, peers: peers, logPath: workspace.file("\(name).log"), extra: extra)
        processes[process.daemon.pid] = process
        return process
    }
}

extension PeerProcess {
    fileprivate var bootstrapDaemon: BootstrapDaemon {
        let child = daemon.child
        return BootstrapDaemon(
            name: name, data: data, pid: daemon.pid, api: ReplicaAPI(endpoint: api, namespace: nil),
            logPath: daemon.logPath, isRunning: { child.isRunning })
    }
}

/// A on host 1 and the fresh replicas on host 2 of a netlab, started as
/// `peerd-bench wifi` starts them (``NetLab/start(_:peers:extra:listen:)``:
/// `--listen 0.0.0.0:4100 --log-level debug`, plus `--no-mdns`), each API
/// on its host's 127.0.0.1:4000, which the bench reaches through the host's
/// network namespace.
final class LabSite: BootstrapSite {
    let lab: NetLab
    private var daemons: [Int32: LabDaemon] = [:]

    init(lab: NetLab) { self.lab = lab }

    var description: String { "netlab: A on host 1, the fresh replica on host 2" }

    func startSource(data: String) async throws -> BootstrapDaemon {
        let node = LabNode(name: "A", host: 1, data: URL(fileURLWithPath: data), replicaID: "bench-source")
        return try await start(node, peers: [])
    }

    func join(_ name: String, code: String) async throws -> String {
        try await lab.initNode(name, on: 2, joining: code).node.data.path
    }

    func startFresh(_ name: String, data: String, extra: [String]) async throws -> BootstrapDaemon {
        let node = LabNode(name: name, host: 2, data: URL(fileURLWithPath: data), replicaID: name)
        return try await start(node, peers: ["\(lab.address(of: 1)):4100"], extra: extra)
    }

    func stop(_ daemon: BootstrapDaemon) async throws {
        guard let running = daemons.removeValue(forKey: daemon.pid) else { return }
        try await lab.stop(running)
    }

    private func start(_ node: LabNode, peers: [String], extra: [String] = []) async throws -> BootstrapDaemon {
        let daemon = try await lab.start(node, peers: peers, extra: ["--no-mdns"] + extra)
        daemons[daemon.pid] = daemon
        return BootstrapDaemon(
            name: node.name, data: node.data.path, pid: daemon.pid,
            api: ReplicaAPI(endpoint: .local(4000), namespace: lab.namespace(of: node.host)),
            logPath: daemon.process.stderrFile ?? daemon.process.stdoutFile, isRunning: { daemon.isRunning })
    }
}
