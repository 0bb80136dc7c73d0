import Foundation
import TestSupport

/// Labs of `scripts/netlab.sh` hosts for the discovery tests: namespaces
/// under `dt` plus five random characters, a /24 of `10.78` of their own,
/// state in a temporary directory, `netlab.sh down` when the test ends,
/// passed or failed. Waits give up after 15 s.
enum ProbeLab {
    /// The `mdns-probe` executable, beside the test binary (or in `$PEERSYNC_BIN_DIR`).
    static let probePath = Executables.url("mdns-probe").path

    /// Why lab tests cannot run here, or `nil`.
    static let unavailableReason = NetLab.unavailableReason(executables: [probePath])

    /// Brings up `hosts` hosts, runs `body`, and takes the lab down whatever happens.
    static func with(hosts: Int, _ body: (NetLab) async throws -> Void) async throws {
        try await NetLab.with(hosts: hosts, prefix: "dt", network: "10.78", patience: .seconds(15), body)
    }
}

extension NetLab {
    /// Starts `mdns-probe` in host `host`, detached, writing its events to a log.
    func startProbe(
        _ label: String, on host: Int, id: String, cluster: String = "c0ffee00", port: UInt16 = 4100,
        role: String = "peer", name: String? = nil, extra: [String] = [], environment: [String: String] = [:]
    ) async throws -> Probe {
        var command = [ProbeLab.probePath, "--port", "\(port)", "--id", id, "--cluster", cluster, "--role", role]
        if let name { command += ["--name", name] }
        let process = try await spawn(
            "\(label) (host \(host), id \(id))", on: host, command + extra, environment: environment,
            program: "mdns-probe")
        return Probe(label: label, replicaID: id, process: process)
    }
}
