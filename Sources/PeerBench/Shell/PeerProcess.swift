import ChildProcesses
import DaemonClient
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A `peerd run` child on loopback as the shell benchmark sees it: from
/// outside, through its two ports, its log and `/proc/<pid>`, never
/// through the daemon's own Swift types.
final class PeerProcess {
    /// For messages and the report, e.g. `A`.
    let name: String
    /// Its data directory.
    let data: String
    /// The child itself.
    let daemon: LoggedChild
    /// Where it listens for peers (`listening on 127.0.0.1:PORT`).
    let gossipPort: UInt16
    /// Its HTTP API (`http on 127.0.0.1:PORT`).
    let api: DaemonEndpoint

    /// Starts `peerd run` on 127.0.0.1 (both ports picked by the kernel, no
    /// mDNS, log level info), dialing `peers`, and waits until it printed
    /// both ports.
    init(
        name: String, peerd: String, data: String, peers: [UInt16] = [], logPath: String,
        descriptorLimit: Int? = nil, extra: [String] = []
    ) throws {
        self.name = name
        self.data = data
        var arguments = [
            "run", "--data", data, "--listen", "127.0.0.1:0", "--no-mdns", "--http", "127.0.0.1:0", "--log-level",
            "info",
        ]
        for port in peers { arguments += ["--peer", "127.0.0.1:\(port)"] }
        arguments += extra
        if let descriptorLimit {
            daemon = try LoggedChild(
                name: name, "/bin/sh", ["-c", "ulimit -n \(descriptorLimit) && exec \"$0\" \"$@\"", peerd] + arguments,
                logPath: logPath)
        } else {
            daemon = try LoggedChild(name: name, peerd, arguments, logPath: logPath)
        }
        do {
            let lines = try daemon.waitForLines(startingWith: ["listening on ", "http on "])
            gossipPort = try PeerProcess.port(of: lines[0], name: name)
            api = .local(try PeerProcess.port(of: lines[1], name: name))
        } catch {
            daemon.stop()
            throw error
        }
    }

    deinit { daemon.stop() }

    /// Descriptors it has open now.
    var openDescriptors: Int? { ChildStats.openDescriptors(pid: daemon.pid) }

    /// How it ended, nil while it runs: `exited with status 1`, `killed by signal 9`.
    var exitDescription: String? {
        guard let ended = daemon.child.termination else { return nil }
        return ended.reason == .uncaughtSignal
            ? "killed by signal \(ended.status)" : "exited with status \(ended.status)"
    }

    /// Waits until its thread count is at most `threads`; returns the seconds
    /// that took, nil when it did not happen within `seconds`.
    func waitForThreads(atMost threads: Int, seconds: Double) -> Double? {
        let start = ContinuousClock.now
        var dropped = false
        _ = Poll.until(timeout: .milliseconds(Int(seconds * 1000)), every: .milliseconds(100)) {
            dropped = daemon.sample().threads.map { $0 <= threads } ?? false
            return dropped || !daemon.child.isRunning
        }
        return dropped ? (ContinuousClock.now - start).seconds : nil
    }

    /// Its threads by name (`/proc/<pid>/task/*/comm`, trailing digits
    /// dropped), most frequent first: `peersync-conn- × 20, peerd × 1`.
    func threadNames() -> String {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(daemon.pid)/task")) ?? []
        let names = tasks.compactMap { task in
            (try? String(contentsOfFile: "/proc/\(daemon.pid)/task/\(task)/comm", encoding: .utf8)).map { comm in
                String(
                    comm.trimmingCharacters(in: .whitespacesAndNewlines).reversed().drop(while: \.isNumber).reversed())
            }
        }
        let counts = Dictionary(grouping: names, by: { $0 }).mapValues(\.count)
        return counts.sorted { ($0.value, $1.key) > ($1.value, $0.key) }.map { "\($0.key) × \($0.value)" }
            .joined(separator: ", ")
    }

    private static func port(of address: String, name: String) throws -> UInt16 {
        guard let text = address.split(separator: ":").last, let port = UInt16(text) else {
            throw ChildProcessError("\(name) printed an address without a port: \(address)")
        }
        return port
    }
}
