import Foundation
import TestSupport
import Testing

/// A lab of `scripts/netlab.sh` hosts for one test: namespaces under a
/// prefix of its own (so that concurrent runs never meet), state in a
/// temporary directory, and `netlab.sh down` when the test ends, passed or
/// failed.
final class NetLab {
    /// The project's lab script.
    static let script = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("scripts/netlab.sh").path

    /// Why lab tests cannot run here, or `nil`.
    static let unavailableReason: String? = {
        guard getuid() == 0 else { return "network namespace tests need root" }
        for tool in ["ip", "nsenter", "unshare", "setsid", "dbus-daemon", "avahi-daemon", "avahi-browse"]
        where which(tool) == nil {
            return "network namespace tests need \(tool) (avahi-daemon avahi-utils dbus iproute2 util-linux)"
        }
        guard FileManager.default.isExecutableFile(atPath: script) else { return "\(script) is missing" }
        guard FileManager.default.isExecutableFile(atPath: probePath) else {
            return "\(probePath) is missing: build with `swift build --build-tests`"
        }
        return nil
    }()

    /// The `mdns-probe` executable: in `$PEERSYNC_BIN_DIR`, else beside the test binary.
    static let probePath: String = {
        if let dir = ProcessInfo.processInfo.environment["PEERSYNC_BIN_DIR"] {
            return URL(fileURLWithPath: dir).appendingPathComponent("mdns-probe").path
        }
        var url = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        while !FileManager.default.fileExists(atPath: url.appendingPathComponent("mdns-probe").path),
            url.pathComponents.count > 1
        {
            url.deleteLastPathComponent()
        }
        return url.appendingPathComponent("mdns-probe").path
    }()

    private static func which(_ tool: String) -> String? {
        let path = (ProcessInfo.processInfo.environment["PATH"] ?? "") + ":/usr/sbin:/sbin:/usr/bin:/bin"
        return path.split(separator: ":").map { "\($0)/\(tool)" }.first {
            FileManager.default.isExecutableFile(atPath: $0)
        }
    }

    let prefix: String
    let net: String
    let directory: TemporaryDirectory
    private(set) var probes: [Probe] = []

    private var environment: [String: String] {
        ["NETLAB_PREFIX": prefix, "NETLAB_NET": net, "LAB": directory.path("lab")]
    }

    private init() throws {
        let letters = Array("abcdefghijklmnopqrstuvwxyz0123456789")
        var prefix: String
        repeat {
            prefix = "dt" + String((0..<5).map { _ in letters.randomElement()! })
        } while FileManager.default.fileExists(atPath: "/run/netns/\(prefix)br")
        self.prefix = prefix
        net = "10.78.\(Int.random(in: 0...255))"
        directory = try TemporaryDirectory()
    }

    /// Brings up `hosts` hosts, runs `body`, and takes the lab down whatever happens.
    static func with(hosts: Int, _ body: (NetLab) async throws -> Void) async throws {
        let lab = try NetLab()
        do {
            try await lab.netlab(["up", "\(hosts)"])
            try await body(lab)
        } catch {
            await lab.down()
            throw error
        }
        await lab.down()
    }

    /// `netlab.sh down`: stops the probes and daemons, deletes the namespaces, unmounts.
    func down() async {
        do {
            try await netlab(["down"])
        } catch {
            Issue.record("netlab down failed: \(error)")
        }
    }

    /// Runs `netlab.sh ARGUMENTS` for this lab; throws unless it exits 0.
    @discardableResult
    func netlab(_ arguments: [String]) async throws -> CommandResult {
        try await Command.check(Self.script, arguments, environment: environment)
    }

    /// Runs `command` inside host `host` to completion.
    func exec(_ host: Int, _ command: [String]) async throws -> CommandResult {
        try await Command.run(Self.script, ["exec", "\(host)"] + command, environment: environment)
    }

    /// Host `host`'s IPv4 address.
    func address(of host: Int) -> String { "\(net).\(10 + host)" }

    /// The path of host `host`'s D-Bus system bus socket, as seen from outside the lab.
    func busSocket(of host: Int) -> String { directory.path("lab/\(prefix)\(host)/run/dbus/system_bus_socket") }

    /// Starts `mdns-probe` in host `host`, detached, writing its events to a log.
    func startProbe(
        _ label: String, on host: Int, id: String, cluster: String = "c0ffee00", port: UInt16 = 4100,
        role: String = "peer", name: String? = nil, extra: [String] = [], environment: [String: String] = [:]
    ) async throws -> Probe {
        let probe = Probe(
            label: label, host: host, replicaID: id, pidFile: directory.path("\(label).pid"),
            logFile: directory.path("\(label).log"))
        var command = environment.isEmpty ? [] : ["env"] + environment.map { "\($0)=\($1)" }
        command += [Self.probePath, "--port", "\(port)", "--id", id, "--cluster", cluster, "--role", role]
        if let name { command += ["--name", name] }
        try await netlab(["spawn", "\(host)", probe.pidFile, probe.logFile] + command + extra)
        probes.append(probe)
        return probe
    }

    /// Every probe's log and the tail of each host's avahi-daemon log, for a failure message.
    func details() -> String {
        var text = "lab \(prefix) (\(net).0/24)\n" + probes.map(\.log).joined(separator: "\n")
        let hosts = (try? FileManager.default.contentsOfDirectory(atPath: directory.path("lab"))) ?? []
        for host in hosts.sorted() where host.hasPrefix(prefix) {
            let log = (try? String(contentsOfFile: directory.path("lab/\(host)/avahi.log"), encoding: .utf8)) ?? ""
            text += "\n--- \(host) avahi.log (tail):\n" + log.split(separator: "\n").suffix(8).joined(separator: "\n")
        }
        return text
    }
}
