import Discovery
import Foundation
import TestSupport

/// One `mdns-probe` running inside a lab host, started detached by
/// `netlab.sh spawn`: the process and the log of its stdout, one
/// ``DiscoveryEvent`` per line.
struct Probe: Sendable {
    /// A `found` line.
    struct Found: Hashable, Sendable {
        var replicaID: String
        var address: String
        var role: String
        var version: String
        var name: String
    }

    var label: String
    var replicaID: String
    let process: LabProcess

    /// The lines the probe has written so far (complete lines only).
    var lines: [String] { process.stdout.lines }

    /// Every `found` line so far, in order.
    var found: [Found] { lines.compactMap(Self.parseFound) }

    /// The replica ids of every `lost` line so far, in order.
    var lost: [String] {
        lines.compactMap { line in
            guard line.hasPrefix("lost ") else { return nil }
            return Self.fields(of: line)["id"]
        }
    }

    /// The `warning` lines so far.
    var warnings: [String] { lines.filter { $0.hasPrefix("warning ") } }

    /// The `info` lines so far.
    var infos: [String] { lines.filter { $0.hasPrefix("info ") } }

    /// How many times the probe's service was established (`info published …`).
    var publications: Int { infos.filter { $0.hasPrefix("info published ") }.count }

    /// Whether it has reported `replicaID` as found.
    func hasFound(_ replicaID: String) -> Bool { found.contains { $0.replicaID == replicaID } }

    /// The probe's pid, while it runs.
    var pid: Int32? { process.isRunning ? process.pid : nil }

    /// Sends SIGTERM: the probe stops its discovery (withdrawing its service) and exits.
    func terminate() throws { try process.send(SIGTERM) }

    static func parseFound(_ line: String) -> Found? {
        guard line.hasPrefix("found ") else { return nil }
        let fields = fields(of: line)
        guard let id = fields["id"], let address = fields["addr"], let role = fields["role"], let version = fields["v"],
            let name = fields["name"]
        else { return nil }
        return Found(replicaID: id, address: address, role: role, version: version, name: name)
    }

    /// `key=value` fields after the event word; `name=` takes the rest of the line.
    static func fields(of line: String) -> [String: String] {
        var fields: [String: String] = [:]
        var head = Substring(line)
        if let name = line.range(of: " name=") {
            fields["name"] = String(line[name.upperBound...])
            head = line[..<name.lowerBound]
        }
        for field in head.split(separator: " ").dropFirst() {
            guard let equals = field.firstIndex(of: "=") else { continue }
            fields[String(field[..<equals])] = String(field[field.index(after: equals)...])
        }
        return fields
    }
}
