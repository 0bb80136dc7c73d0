import ChildProcesses
import Foundation
import Synchronization

/// Hosts of `scripts/netlab.sh` for one test or one benchmark run, driven
/// from Swift: network namespaces on one bridge, each with its own D-Bus
/// system bus and avahi-daemon, under a namespace prefix and a /24 of
/// their own so that neither a concurrent run nor a leftover of a killed
/// one can collide with them.
///
/// ```swift
/// try await NetLab.with(hosts: 2, prefix: "dt", network: "10.78") { lab in
///     let a = try await lab.spawn("a", on: 1, [probe, "--port", "4100", "--id", "a"])
///     try await lab.avahiStop(2, signal: "KILL")
///     try await lab.wait("a publishes") { a.stdout.lines.contains { $0.hasPrefix("info published") } }
/// }
/// ```
///
/// The lab is taken down (every process in its hosts stopped, namespaces
/// deleted, mounts undone) when `with`'s body returns or throws, and by
/// `deinit` should anything else end the lab's life. Its work directory
/// (configs, logs, each host's `/run`, the processes' output) goes with it
/// unless it was given.
public final class NetLab {
    /// The project's lab script as ``LabTools`` finds it for this process: `$PEERSYNC_NETLAB`, else beside
    /// the executable (a build puts it there), in `../share/peersync/`, or on `PATH`; the first place it
    /// looked when it is nowhere (``unavailableReason(script:executables:)`` then says it is missing).
    public static var defaultScript: String {
        let tools = LabTools.running
        let candidates = tools.netlabCandidates(option: nil)
        return candidates.first(where: tools.isExecutable) ?? candidates[0]
    }

    /// Labs made by this process so far: each takes the next /24.
    private static let made = Atomic<Int>(0)
    private static let firstNet = Int.random(in: 0..<256)

    /// The namespace prefix: host I is namespace `PREFIX` + I, the bridge `PREFIX` + `br`.
    public let prefix: String
    /// The first three octets of the lab's /24, e.g. `10.79.23`.
    public let network: String
    /// How many hosts `with` brings up.
    public let hosts: Int
    /// The lab script this lab runs.
    public let script: String
    /// The `peerd` executable that ``NetLab/peerd(_:on:data:)`` runs in the hosts, when one was given.
    public let peerd: String?
    /// How long ``wait(_:timeout:every:details:_:)`` waits unless told otherwise.
    public let patience: Duration
    /// The work directory: the lab's state and the output of what it spawned.
    public let directory: URL
    private let ownsDirectory: Bool
    private var isDown = false
    /// Everything ``spawn(_:on:_:environment:program:separateStderr:)`` started, in order.
    public private(set) var processes: [LabProcess] = []

    private var environment: [String: String] {
        ["NETLAB_PREFIX": prefix, "NETLAB_NET": network, "LAB": path("lab")]
    }

    /// A lab not brought up yet: `prefix` (one or two letters) plus five
    /// random characters, the next /24 of `network` (two octets, e.g.
    /// `10.79`), its state in `directory` (kept), else in a fresh temporary
    /// directory (removed with the lab).
    public init(
        hosts: Int, prefix: String, network: String, peerd: String? = nil, patience: Duration = .seconds(30),
        directory: String? = nil, script: String = NetLab.defaultScript
    ) throws {
        let characters = Array("abcdefghijklmnopqrstuvwxyz0123456789")
        var name: String
        repeat {
            name = prefix + String((0..<5).map { _ in characters.randomElement()! })
        } while FileManager.default.fileExists(atPath: "/run/netns/\(name)br")
        self.prefix = name
        let serial = Self.made.add(1, ordering: .relaxed).newValue
        self.network = "\(network).\((Self.firstNet + serial) % 256)"
        self.hosts = hosts
        self.peerd = peerd
        self.patience = patience
        self.script = script
        if let directory {
            self.directory = URL(fileURLWithPath: directory).appendingPathComponent(name)
            ownsDirectory = false
        } else {
            self.directory = FileManager.default.temporaryDirectory.appendingPathComponent("netlab-\(name)")
            ownsDirectory = true
        }
        try FileManager.default.createDirectory(at: self.directory, withIntermediateDirectories: true)
    }

    /// Brings up a lab (see ``init(hosts:prefix:network:peerd:patience:directory:script:)``),
    /// runs `body`, and takes the lab down whatever happens.
    @discardableResult
    public static func with<Result>(
        hosts: Int, prefix: String, network: String, peerd: String? = nil, patience: Duration = .seconds(30),
        directory: String? = nil, script: String = NetLab.defaultScript, _ body: (NetLab) async throws -> Result
    ) async throws -> Result {
        let lab = try NetLab(
            hosts: hosts, prefix: prefix, network: network, peerd: peerd, patience: patience, directory: directory,
            script: script)
        let result: Result
        do {
            try await lab.up()
            result = try await body(lab)
        } catch {
            try? await lab.down()
            throw error
        }
        try await lab.down()
        return result
    }

    deinit {
        // A lab that `with` did not take down: its `down` failed, or `with` was cut short.
        if !isDown { _ = try? ChildProcess.run(URL(fileURLWithPath: script), ["down"], environment: environment) }
        if ownsDirectory { try? FileManager.default.removeItem(at: directory) }
    }

    /// `netlab.sh up HOSTS`: the namespaces, the bridge, each host's D-Bus and avahi-daemon.
    public func up() async throws {
        try await netlab(["up", "\(hosts)"])
    }

    /// `netlab.sh down`: stops every process in the hosts, deletes the namespaces, unmounts.
    public func down() async throws {
        guard !isDown else { return }
        try await netlab(["down"])
        isDown = true  // only now: should `down` fail, `deinit` tries once more
        keepLogs()
    }

    /// Runs `netlab.sh ARGUMENTS` for this lab; throws unless it exits 0.
    @discardableResult
    public func netlab(_ arguments: [String]) async throws -> ProcessResult {
        let result = try await ChildProcess.run(URL(fileURLWithPath: script), arguments, environment: environment)
        guard result.status == 0 else { throw LabFailure("netlab.sh \(arguments.joined(separator: " ")): \(result)") }
        return result
    }

    /// Runs `command` inside host `host` to completion.
    public func exec(_ host: Int, _ command: [String]) async throws -> ProcessResult {
        try await ChildProcess.run(
            URL(fileURLWithPath: script), ["exec", "\(host)"] + command, environment: environment)
    }

    /// Host `host`'s IPv4 address.
    public func address(of host: Int) -> String { "\(network).\(10 + host)" }

    /// Host `host`'s network namespace.
    public func namespace(of host: Int) -> String { "\(prefix)\(host)" }

    /// The path of host `host`'s D-Bus system bus socket, as seen from outside the lab.
    public func busSocket(of host: Int) -> String { path("lab/\(prefix)\(host)/run/dbus/system_bus_socket") }

    /// The path of `name` in the work directory (the hosts share the file system).
    public func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    /// Polls `condition` every `interval` until it holds and returns how long that took; throws
    /// ``TimedOut`` with ``details()`` (and `details`) when `timeout` (by default ``patience``) passes first.
    @discardableResult
    public func wait(
        _ what: String, timeout: Duration? = nil, every interval: Duration = .milliseconds(20),
        details: () -> String = { "" }, _ condition: () async throws -> Bool
    ) async throws -> Duration {
        try await Poll.eventually(
            what, timeout: timeout ?? patience, every: interval,
            details: {
                let extra = details()
                return self.details() + (extra.isEmpty ? "" : "\n" + extra)
            }, condition)
    }

    /// The tail of every spawned process's log and of each host's avahi-daemon log, for a failure message.
    public func details() -> String {
        var text = "lab \(prefix) (\(network).0/24)"
        for process in processes {
            text += "\n--- \(process.name) pid \(process.pid) (running: \(process.isRunning)):\n"
            text += process.log.lines.suffix(40).joined(separator: "\n")
        }
        for host in 1...max(hosts, 1) {
            let log = (try? String(contentsOfFile: avahiLog(of: host), encoding: .utf8)) ?? ""
            text +=
                "\n--- host \(host) avahi.log (tail):\n" + log.split(separator: "\n").suffix(8).joined(separator: "\n")
        }
        return text
    }

    /// Host `host`'s avahi-daemon log.
    func avahiLog(of host: Int) -> String { path("lab/\(prefix)\(host)/avahi.log") }

    /// Records a process that ``spawn(_:on:_:environment:program:separateStderr:)`` started.
    func record(_ process: LabProcess) { processes.append(process) }

    /// With `PEERSYNC_LAB_LOGS=DIR`, copies every spawned process's output and each host's
    /// avahi-daemon log to `DIR/PREFIX/` before the work directory goes.
    private func keepLogs() {
        guard let keep = ProcessInfo.processInfo.environment["PEERSYNC_LAB_LOGS"] else { return }
        let target = URL(fileURLWithPath: keep).appendingPathComponent(prefix)
        try? FileManager.default.createDirectory(at: target, withIntermediateDirectories: true)
        var files = processes.flatMap { [$0.stdoutFile] + ($0.stderrFile.map { [$0] } ?? []) }
        files += (1...max(hosts, 1)).map { avahiLog(of: $0) }
        for file in files {
            let url = URL(fileURLWithPath: file)
            let name =
                file.hasSuffix("avahi.log")
                ? url.deletingLastPathComponent().lastPathComponent + ".avahi.log" : url.lastPathComponent
            try? FileManager.default.copyItem(atPath: file, toPath: target.appendingPathComponent(name).path)
        }
    }
}

/// Something in a lab did not go as it must: a script that failed, a process that did not start.
public struct LabFailure: Error, CustomStringConvertible {
    public var description: String

    public init(_ description: String) { self.description = description }
}
