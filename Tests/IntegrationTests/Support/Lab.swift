import Foundation
import Synchronization
import TestSupport

/// One replica of a lab test: a data directory (in the test's temporary
/// directory: the hosts share the file system) used on one lab host.
struct LabNode: Sendable, CustomStringConvertible {
    var name: String
    var host: Int
    var data: URL
    var replicaID: String

    var description: String { "\(name) (host \(host), \(replicaID.prefix(8)))" }
}

/// `scripts/netlab.sh` hosts for one test, driven from Swift: network
/// namespaces on one bridge, each with its own D-Bus system bus and
/// avahi-daemon, under a prefix and a /24 of their own so that neither a
/// concurrent run nor a leftover of a killed one can collide with them.
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
/// deleted, mounts undone) when `with`'s body returns or throws, and by
/// `deinit` should anything else end the lab's life.
final class Lab {
    /// The project's lab script.
    static let script = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("scripts/netlab.sh").path

    /// The `peerd` executable, run inside the hosts by absolute path.
    static let peerd = Executables.url("peerd").path

    /// Why lab tests cannot run here, or `nil`.
    static let unavailableReason: String? = {
        guard geteuid() == 0 else { return "network namespace tests need root" }
        for tool in ["ip", "nsenter", "unshare", "setsid", "dbus-daemon", "avahi-daemon", "avahi-browse"]
        where which(tool) == nil {
            return "network namespace tests need \(tool) (packages iproute2 util-linux dbus avahi-daemon avahi-utils)"
        }
        guard let ip = which("ip"), (try? LabProcess.runBlocking(ip, ["netns", "list"]))?.status == 0 else {
            return "`ip netns` is unavailable here"
        }
        guard FileManager.default.isExecutableFile(atPath: script) else { return "\(script) is missing" }
        guard FileManager.default.isExecutableFile(atPath: peerd) else {
            return "\(peerd) is missing: build with `swift build --build-tests`"
        }
        return nil
    }()

    private static func which(_ tool: String) -> String? {
        let path = (ProcessInfo.processInfo.environment["PATH"] ?? "") + ":/usr/sbin:/sbin:/usr/bin:/bin"
        return path.split(separator: ":").map { "\($0)/\(tool)" }.first {
            FileManager.default.isExecutableFile(atPath: $0)
        }
    }

    /// Labs made by this process so far: each takes the next /24.
    private static let made = Atomic<Int>(0)
    private static let firstNet = Int.random(in: 0..<256)

    let prefix: String
    let net: String
    let hosts: Int
    let temp: TemporaryDirectory
    private var isDown = false
    private(set) var daemons: [LabDaemon] = []

    private var environment: [String: String] {
        ["NETLAB_PREFIX": prefix, "NETLAB_NET": net, "LAB": temp.path("lab")]
    }

    private init(hosts: Int) throws {
        let characters = Array("abcdefghijklmnopqrstuvwxyz0123456789")
        var prefix: String
        repeat {
            prefix = "dl" + String((0..<5).map { _ in characters.randomElement()! })
        } while FileManager.default.fileExists(atPath: "/run/netns/\(prefix)br")
        self.prefix = prefix
        let serial = Self.made.add(1, ordering: .relaxed).newValue
        net = "10.79.\((Self.firstNet + serial) % 256)"
        self.hosts = hosts
        temp = try TemporaryDirectory()
    }

    /// Brings up `hosts` hosts, runs `body`, and takes the lab down whatever happens.
    static func with(hosts: Int, _ body: (Lab) async throws -> Void) async throws {
        let lab = try Lab(hosts: hosts)
        let clock = ContinuousClock()
        var phases: [(String, Duration)] = []
        do {
            phases.append(("up", try await clock.measure { try await lab.netlab(["up", "\(hosts)"]) }))
            phases.append(("test", try await clock.measure { try await body(lab) }))
        } catch {
            try? await lab.down()
            throw error
        }
        phases.append(("down", try await clock.measure { try await lab.down() }))
        print("lab \(lab.prefix), \(hosts) hosts: " + phases.map { "\($0) \(seconds($1))" }.joined(separator: ", "))
    }

    /// `1.234 s`.
    static func seconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        return String(format: "%.3f s", Double(seconds) + Double(attoseconds) / 1e18)
    }

    deinit {
        // A lab that `with` did not take down: its `down` failed, or `with` was cut short.
        if !isDown { _ = try? LabProcess.runBlocking(Self.script, ["down"], environment: environment) }
    }

    /// `netlab.sh down`: stops every process in the hosts, deletes the namespaces, unmounts.
    func down() async throws {
        guard !isDown else { return }
        try await netlab(["down"])
        isDown = true  // only now: should `down` fail, `deinit` tries once more
        keepLogs()
    }

    /// With `PEERSYNC_LAB_LOGS=DIR`, copies every daemon's stdout and stderr and each host's
    /// avahi-daemon log to `DIR/PREFIX/` before the temporary directory goes.
    private func keepLogs() {
        guard let keep = ProcessInfo.processInfo.environment["PEERSYNC_LAB_LOGS"] else { return }
        let target = URL(fileURLWithPath: keep).appendingPathComponent(prefix)
        try? FileManager.default.createDirectory(at: target, withIntermediateDirectories: true)
        var files = daemons.flatMap { [$0.stdoutFile, $0.stderrFile] }
        files += (1...hosts).map { temp.path("lab/\(prefix)\($0)/avahi.log") }
        for file in files {
            let name =
                file.hasSuffix("avahi.log")
                ? URL(fileURLWithPath: file).deletingLastPathComponent().lastPathComponent
                    + ".avahi.log" : URL(fileURLWithPath: file).lastPathComponent
            try? FileManager.default.copyItem(atPath: file, toPath: target.appendingPathComponent(name).path)
        }
    }

    /// Runs `netlab.sh ARGUMENTS` for this lab; throws unless it exits 0.
    @discardableResult
    func netlab(_ arguments: [String]) async throws -> LabResult {
        let result = try await LabProcess.run(Self.script, arguments, environment: environment)
        guard result.status == 0 else { throw LabFailure("netlab.sh \(arguments.joined(separator: " ")): \(result)") }
        return result
    }

    /// Runs `command` inside host `host` to completion.
    func exec(_ host: Int, _ command: [String]) async throws -> LabResult {
        try await LabProcess.run(Self.script, ["exec", "\(host)"] + command, environment: environment)
    }

    /// Host `host`'s IPv4 address.
    func address(of host: Int) -> String { "\(net).\(10 + host)" }

    /// Host `host`'s network namespace.
    func namespace(of host: Int) -> String { "\(prefix)\(host)" }

    // MARK: - Avahi and multicast

    /// Stops host `host`'s avahi-daemon: SIGTERM (it sends goodbyes) or SIGKILL (a crash).
    func avahiStop(_ host: Int, signal: String = "TERM") async throws {
        try await netlab(["avahi-stop", "\(host)", signal])
    }

    /// (Re)starts host `host`'s avahi-daemon and waits until it has started up.
    func avahiStart(_ host: Int) async throws { try await netlab(["avahi-start", "\(host)"]) }

    /// Host `host` neither sends nor hears mDNS from now on; unicast keeps working.
    func blockMulticast(_ host: Int) async throws { try await netlab(["block-multicast", "\(host)"]) }

    /// The resolved `_peersync._tcp` services (`=;…` lines of `avahi-browse -rpt`) seen from host `host`.
    func browse(from host: Int) async throws -> [String] {
        let result = try await exec(host, ["avahi-browse", "-rpt", "_peersync._tcp"])
        return result.stdout.split(separator: "\n").map(String.init).filter { $0.hasPrefix("=;") }
    }

    // MARK: - peerd

    /// Runs `peerd ARGUMENTS --data DIR` inside host `host` to completion.
    func peerd(_ arguments: [String], on host: Int, data: URL) async throws -> LabResult {
        try await exec(host, [Self.peerd] + arguments + ["--data", data.path])
    }

    /// Like ``peerd(_:on:data:)`` for `node`, requiring exit 0; returns stdout, trimmed.
    @discardableResult
    func ok(_ arguments: [String], _ node: LabNode) async throws -> String {
        let result = try await peerd(arguments, on: node.host, data: node.data)
        guard result.status == 0 else { throw LabFailure("peerd \(arguments) on \(node): \(result)") }
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// `peerd init` (a new cluster) or `peerd init --join CODE` of a replica `name` used on host `host`;
    /// returns the node and the fingerprint of its cluster key.
    func initNode(_ name: String, on host: Int, joining code: String? = nil) async throws -> (
        node: LabNode, fingerprint: String
    ) {
        let data = temp.url(name)
        let result = try await peerd(["init"] + (code.map { ["--join", $0] } ?? []), on: host, data: data)
        let words = result.stdout.split(whereSeparator: \.isWhitespace).map(String.init)
        guard result.status == 0, let at = words.firstIndex(of: "replica"), at + 1 < words.count,
            let clusterAt = words.firstIndex(of: "cluster"), clusterAt + 1 < words.count
        else { throw LabFailure("peerd init of \(name) on host \(host): \(result)") }
        let fingerprint = words[clusterAt + 1].trimmingCharacters(in: .alphanumerics.inverted)
        return (LabNode(name: name, host: host, data: data, replicaID: words[at + 1]), fingerprint)
    }

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

    /// Starts `peerd run --data DIR --listen 0.0.0.0:4100 --log-level debug` (plus `--peer` for
    /// each of `peers`, plus `extra`) detached inside `node`'s host, its stdout and stderr in files,
    /// and waits until it listens.
    func start(
        _ node: LabNode, peers: [String] = [], extra: [String] = [], listen: String = "0.0.0.0:4100"
    ) async throws -> LabDaemon {
        let run = daemons.count + 1
        let files = (
            pid: temp.path("\(node.name).\(run).pid"), out: temp.path("\(node.name).\(run).out"),
            err: temp.path("\(node.name).\(run).err")
        )
        var command = ["/bin/sh", "-c", #"exec "$@" 2>"$0""#, files.err, Self.peerd, "run"]
        command += ["--data", node.data.path, "--listen", listen, "--log-level", "debug"]
        for peer in peers { command += ["--peer", peer] }
        let startedAt = Date()
        try await netlab(["spawn", "\(node.host)", files.pid, files.out] + command + extra)
        let pidText = (try? String(contentsOfFile: files.pid, encoding: .utf8)) ?? ""
        guard let pid = Int32(pidText.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw LabFailure("spawn of \(node) wrote no pid to \(files.pid)")
        }
        let daemon = LabDaemon(
            node: node, pid: pid, startedAt: startedAt, stdoutFile: files.out, stderrFile: files.err)
        daemons.append(daemon)
        try await wait("\(node) listening") {
            guard daemon.isAlive else { throw LabFailure("\(daemon.name) exited at start\n\(details())") }
            return daemon.stdoutLines.contains { $0.hasPrefix("listening on ") } && daemon.isRunning
        }
        guard daemon.isIn(namespace: namespace(of: node.host)) else {
            throw LabFailure("\(daemon.name) (pid \(pid)) is not in namespace \(namespace(of: node.host))")
        }
        return daemon
    }

    /// Sends `signal` to `daemon` and waits until it has ended; returns when it sent the signal.
    @discardableResult
    func stop(_ daemon: LabDaemon, signal: Int32 = SIGTERM) async throws -> Date {
        let sent = Date()
        try daemon.send(signal)
        try await wait("\(daemon.name) ending after signal \(signal)") { !daemon.isRunning }
        return sent
    }

    /// The peers `peerd peers --json` lists for the daemon running on `node`.
    func peers(of node: LabNode) async throws -> [LabPeer] {
        let json = try await ok(["peers", "--json"], node)
        return try JSONDecoder().decode([LabPeer].self, from: Data(json.utf8))
    }

    /// `peerd status --json` of `data` (run outside the lab: it only reads the database).
    func status(_ data: URL) async throws -> ReplicaStatus {
        let result = try await LabProcess.run(Self.peerd, ["status", "--json", "--data", data.path])
        guard result.status == 0 else { throw LabFailure("peerd status of \(data.lastPathComponent): \(result)") }
        return try JSONDecoder().decode(ReplicaStatus.self, from: Data(result.stdout.utf8))
    }

    // MARK: - Waiting

    /// Polls `condition` every `interval` until it holds and returns how long that took; throws (with
    /// every daemon's log) when `timeout` passes first. Never a fixed sleep.
    @discardableResult
    func wait(
        _ what: String, timeout: Duration = .seconds(30), every interval: Duration = .milliseconds(20),
        _ condition: () async throws -> Bool
    ) async throws -> Duration {
        let start = ContinuousClock.now
        while try await !condition() {
            guard ContinuousClock.now < start.advanced(by: timeout) else {
                throw LabFailure("timed out after \(timeout) waiting for \(what)\n\(details())")
            }
            try await Task.sleep(for: interval)
        }
        return start.duration(to: .now)
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

    /// Every daemon's stderr (the tail) and the tail of each host's avahi-daemon log.
    func details() -> String {
        var text = "lab \(prefix) (\(net).0/24)"
        for daemon in daemons {
            text += "\n--- \(daemon.name) pid \(daemon.pid) (running: \(daemon.isRunning)):\n"
            text += daemon.logLines.suffix(40).joined(separator: "\n")
        }
        for host in 1...hosts {
            let log = (try? String(contentsOfFile: temp.path("lab/\(prefix)\(host)/avahi.log"), encoding: .utf8)) ?? ""
            text +=
                "\n--- host \(host) avahi.log (tail):\n" + log.split(separator: "\n").suffix(6).joined(separator: "\n")
        }
        return text
    }
}
