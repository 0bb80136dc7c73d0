import DaemonClient
import Foundation
import TestSupport

/// `peerd run` as a real child process on 127.0.0.1 with a port the kernel
/// picked, its stderr log captured.
///
/// ```swift
/// let a = try Daemon.start(data: temp.url("a"))
/// let b = try Daemon.start(data: temp.url("b"), peers: [a.address])
/// #expect(b.waitForEvent(.peerIdentified))
/// try b.stop()   // SIGTERM; b.kill() is SIGKILL
/// ```
final class Daemon: Sendable {
    let name: String
    let data: URL
    let port: UInt16
    /// The daemon's HTTP API (nil with `--http off`).
    let api: DaemonEndpoint?
    let child: ChildProcess

    private init(name: String, data: URL, port: UInt16, api: DaemonEndpoint?, child: ChildProcess) {
        self.name = name
        self.data = data
        self.port = port
        self.api = api
        self.child = child
    }

    /// Starts `peerd run` on `data` and waits until it prints its port.
    /// mDNS is off: these tests are about static peers on loopback, and a
    /// host's own avahi-daemon must not make them find each other.
    ///
    /// With `descriptorLimit`, it runs under `ulimit -n` of that many
    /// descriptors (through `/bin/sh`, which `exec`s it: the same process).
    static func start(
        _ name: String? = nil, data: URL, peers: [String] = [], logLevel: String = "debug", http: Bool = true,
        extra: [String] = [], descriptorLimit: Int? = nil, timeout: Duration = .seconds(30)
    ) throws -> Daemon {
        let name = name ?? data.lastPathComponent
        var arguments = ["run", "--data", data.path, "--listen", "127.0.0.1:0", "--log-level", logLevel, "--no-mdns"]
        arguments += ["--http", http ? "127.0.0.1:0" : "off"] + extra
        for peer in peers { arguments += ["--peer", peer] }
        let peerd = Executables.url("peerd")
        let child =
            try descriptorLimit.map { limit in
                try ChildProcess(
                    URL(fileURLWithPath: "/bin/sh"),
                    ["-c", "ulimit -n \(limit) && exec \"$0\" \"$@\"", peerd.path] + arguments,
                    name: "peerd run (\(name), ulimit -n \(limit))")
            } ?? ChildProcess(peerd, arguments, name: "peerd run (\(name))")
        let prefixes = ["listening on 127.0.0.1:"] + (http ? ["http on 127.0.0.1:"] : [])
        let printed = child.stdout.lines(startingWith: prefixes, timeout: timeout)?.compactMap { UInt16($0) }
        guard let printed, printed.count == prefixes.count else {
            throw ChildProcessError(
                "peerd run (\(name)) printed no port within \(timeout) (running: \(child.isRunning))\n"
                    + "stdout: \(child.stdout.text)\nstderr: \(child.stderr.text)")
        }
        let api = http ? DaemonEndpoint(host: "127.0.0.1", port: printed[1]) : nil
        return Daemon(name: name, data: data, port: printed[0], api: api, child: child)
    }

    /// `127.0.0.1:PORT`, for another daemon's `--peer`.
    var address: String { "127.0.0.1:\(port)" }
    var isRunning: Bool { child.isRunning }
    var stderr: String { child.stderr.text }

    /// SIGTERM, then waits; returns the exit status (a clean stop is 0).
    @discardableResult
    func stop(timeout: Duration = .seconds(30)) throws -> Int32 {
        try child.stop(with: SIGTERM, timeout: timeout).exitCode
    }

    /// SIGKILL, then waits; true when the signal is what ended the process.
    @discardableResult
    func kill() throws -> Bool {
        try child.stop(with: SIGKILL).reason == .uncaughtSignal
    }
}
