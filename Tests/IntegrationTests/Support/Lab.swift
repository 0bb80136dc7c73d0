import Foundation
import TestSupport

/// Labs of `scripts/netlab.sh` hosts for the `peerd` lab tests: namespaces
/// under `dl` plus five random characters, a /24 of `10.79` of their own,
/// the `peerd` beside the test binary run inside the hosts by absolute path.
///
/// ```swift
/// try await Lab.with(hosts: 2) { lab in
///     let (_, nodes) = try await lab.cluster("a", hosts: [1, 2])
///     let a = try await lab.start(nodes[0])
///     let b = try await lab.start(nodes[1], peers: ["\(lab.address(of: 1)):4100"])
///     try await lab.ok(["item", "create", "Apples", "3"], nodes[0])
///     try await lab.converge(nodes)
///     try await lab.stop(b, signal: SIGKILL)  // a crash; `lab.stop(a)` sends SIGTERM
/// }
/// ```
///
/// The lab is taken down (every process in its hosts stopped, namespaces
/// deleted, mounts undone) when `with`'s body returns or throws.
enum Lab {
    /// The `peerd` executable, run inside the hosts by absolute path.
    static let peerd = Executables.url("peerd").path

    /// Why lab tests cannot run here, or `nil`.
    static let unavailableReason = NetLab.unavailableReason(executables: [peerd])

    /// Brings up `hosts` hosts, runs `body`, and takes the lab down whatever happens.
    static func with(hosts: Int, _ body: (NetLab) async throws -> Void) async throws {
        try await NetLab.with(hosts: hosts, prefix: "dl", network: "10.79", peerd: peerd, body)
    }
}

extension NetLab {
    /// A new cluster: `NAME1` initialised on the first of `hosts`, the others joined with its
    /// share code, one replica per host, named `NAME` and the host number.
    func cluster(_ name: String, hosts: [Int]) async throws -> (fingerprint: String, nodes: [LabNode]) {
        let (first, fingerprint) = try await initNode("\(name)\(hosts[0])", on: hosts[0])
        let code = try await ok(["cluster-code"], first)
        var nodes = [first]
        for host in hosts.dropFirst() {
            let (node, joined) = try await initNode("\(name)\(host)", on: host, joining: code)
            guard joined == fingerprint else { throw LabFailure("\(node) joined \(joined), not \(fingerprint)") }
            nodes.append(node)
        }
        return (fingerprint, nodes)
    }

    /// The peers `peerd peers --json` lists for the daemon running on `node`.
    func peers(of node: LabNode) async throws -> [LabPeer] {
        let json = try await ok(["peers", "--json"], node)
        return try JSONDecoder().decode([LabPeer].self, from: Data(json.utf8))
    }

    /// `peerd status --json` of `data` (run outside the lab: it only reads the database).
    func status(_ data: URL) async throws -> ReplicaStatus {
        let result = try await ChildProcess.run(Executables.url("peerd"), ["status", "--json", "--data", data.path])
        guard result.status == 0 else { throw LabFailure("peerd status of \(data.lastPathComponent): \(result)") }
        return try JSONDecoder().decode(ReplicaStatus.self, from: Data(result.stdout.utf8))
    }

    /// Waits until `nodes` report the same vector cursor and state hash; returns their statuses.
    @discardableResult
    func converge(_ nodes: [LabNode], timeout: Duration = .seconds(30)) async throws -> [ReplicaStatus] {
        var last: [ReplicaStatus] = []
        try await wait("\(nodes.map(\.name).joined(separator: ", ")) converging", timeout: timeout) {
            // Cheap in-process reads first; `peerd status` (which hashes every item) once they agree.
            guard Set(try nodes.map { try Peek.cursor($0.data) }).count == 1 else { return false }
            last = []
            for node in nodes { last.append(try await status(node.data)) }
            return Set(last.map(\.heads)).count == 1 && Set(last.map(\.state_hash)).count == 1
        }
        return last
    }
}
