import ChildProcesses
import Foundation

/// One replica of a lab: a data directory (in the lab's work directory:
/// the hosts share the file system) used on one lab host.
public struct LabNode: Sendable, CustomStringConvertible {
    public var name: String
    public var host: Int
    public var data: URL
    public var replicaID: String

    public init(name: String, host: Int, data: URL, replicaID: String) {
        self.name = name
        self.host = host
        self.data = data
        self.replicaID = replicaID
    }

    /// `n1 (host 1, 3f09a1c2)`.
    public var description: String { "\(name) (host \(host), \(replicaID.prefix(8)))" }
}

/// A `peerd run` of a ``LabNode`` inside its lab host.
public final class LabDaemon: Sendable {
    public let node: LabNode
    public let process: LabProcess

    public init(node: LabNode, process: LabProcess) {
        self.node = node
        self.process = process
    }

    /// `peerd run n1 (host 1, 3f09a1c2)`.
    public var name: String { process.name }
    public var pid: Int32 { process.pid }
    /// Just before `netlab.sh spawn` ran.
    public var startedAt: Date { process.startedAt }
    /// Whether the process runs and is peerd.
    public var isRunning: Bool { process.isRunning }
    /// Its log (standard error), one record a line.
    public var log: LabLog { process.log }

    /// Sends `signal` (after checking that the pid is still peerd's).
    public func send(_ signal: Int32) throws { try process.send(signal) }
}

/// `peerd` on the lab's hosts: commands run inside a host, replicas made
/// with `peerd init`, and `peerd run` started detached. The lab must have
/// been given its `peerd` executable.
///
/// ```swift
/// try await NetLab.with(hosts: 2, prefix: "dl", network: "10.79", peerd: peerd) { lab in
///     let (a, _) = try await lab.initNode("a", on: 1)
///     let (b, _) = try await lab.initNode("b", on: 2, joining: try await lab.ok(["cluster-code"], a))
///     let daemon = try await lab.start(a)
///     try await lab.wait("a publishing") { daemon.log.count("component=mdns", "published") > 0 }
/// }
/// ```
extension NetLab {
    /// Runs `peerd ARGUMENTS --data DIR` inside host `host` to completion.
    public func peerd(_ arguments: [String], on host: Int, data: URL) async throws -> ProcessResult {
        try await exec(host, [try peerdExecutable()] + arguments + ["--data", data.path])
    }

    /// Like ``peerd(_:on:data:)`` for `node`, requiring exit 0; returns stdout, trimmed.
    @discardableResult
    public func ok(_ arguments: [String], _ node: LabNode) async throws -> String {
        let result = try await peerd(arguments, on: node.host, data: node.data)
        guard result.status == 0 else { throw LabFailure("peerd \(arguments) on \(node): \(result)") }
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// `peerd init` (a new cluster) or `peerd init --join CODE` of a replica `name` used on host `host`;
    /// returns the node and the fingerprint of its cluster key.
    public func initNode(_ name: String, on host: Int, joining code: String? = nil) async throws -> (
        node: LabNode, fingerprint: String
    ) {
        let data = directory.appendingPathComponent(name)
        let result = try await peerd(["init"] + (code.map { ["--join", $0] } ?? []), on: host, data: data)
        let words = result.stdout.split(whereSeparator: \.isWhitespace).map(String.init)
        guard result.status == 0, let at = words.firstIndex(of: "replica"), at + 1 < words.count,
            let clusterAt = words.firstIndex(of: "cluster"), clusterAt + 1 < words.count
        else { throw LabFailure("peerd init of \(name) on host \(host): \(result)") }
        let fingerprint = words[clusterAt + 1].trimmingCharacters(in: .alphanumerics.inverted)
        return (LabNode(name: name, host: host, data: data, replicaID: words[at + 1]), fingerprint)
    }

    /// Starts `peerd run --data DIR --listen LISTEN --log-level debug` (plus `--peer` for each of
    /// `peers`, plus `extra`) detached inside `node`'s host, its stdout and stderr in files, and
    /// waits until it listens.
    public func start(
        _ node: LabNode, peers: [String] = [], extra: [String] = [], listen: String = "0.0.0.0:4100"
    ) async throws -> LabDaemon {
        var command = [try peerdExecutable(), "run", "--data", node.data.path, "--listen", listen]
        command += ["--log-level", "debug"] + peers.flatMap { ["--peer", $0] } + extra
        let process = try await spawn("peerd run \(node)", on: node.host, command, separateStderr: true)
        try await wait("\(node) listening") {
            guard process.isRunning else { throw LabFailure("\(process.name) exited at start\n\(details())") }
            return process.stdout.lines.contains { $0.hasPrefix("listening on ") }
        }
        return LabDaemon(node: node, process: process)
    }

    /// Sends `signal` to `daemon` and waits until it has ended; returns when it sent the signal.
    @discardableResult
    public func stop(_ daemon: LabDaemon, signal: Int32 = SIGTERM) async throws -> Date {
        try await stop(daemon.process, signal: signal)
    }

    private func peerdExecutable() throws -> String {
        guard let peerd else { throw LabFailure("lab \(prefix) was made without a peerd executable") }
        return peerd
    }
}
