import ChildProcesses
import Foundation
import NetworkLab

/// The frame relays (`peerd-lab-link`) of the delay faults in force, by host: each a child of this process in the
/// lab's bridge namespace, so that it ends with the run (``ChildProcess`` kills it when released) if the run ends
/// before the fault's heal.
final class LabLinks {
    private var relays: [Int: ChildProcess] = [:]
    /// `peerd-lab-link`; nil when the run has no delay faults.
    private let relay: String?

    init(relay: String?) { self.relay = relay }

    /// Starts the relay of host `host` between two interfaces of `namespace`, `delayMs` each way, and waits
    /// until it copies frames (it says so on its first line).
    func start(host: Int, namespace: String, between: (String, String), delayMs: Int64) throws {
        guard let relay else { throw LabFailure("a delay fault without peerd-lab-link") }
        let process = try ChildProcess(
            URL(fileURLWithPath: "/usr/sbin/ip"),
            ["netns", "exec", namespace, relay, "--between", between.0, between.1, "--delay-ms", "\(delayMs)"],
            name: "peerd-lab-link (host \(host))")
        relays[host] = process
        guard process.stdout.firstLine(startingWith: "peerd-lab-link:", timeout: .seconds(10)) != nil else {
            throw LabFailure("\(process.name) did not start: \(process.stderr.text)")
        }
    }

    /// Whether host `host`'s link runs through its relay now.
    func isDelayed(_ host: Int) -> Bool { relays[host] != nil }

    /// Stops host `host`'s relay (SIGTERM) and waits until it has ended.
    func stop(host: Int) throws {
        guard let process = relays.removeValue(forKey: host) else { return }
        _ = try process.stop(with: SIGTERM, timeout: .seconds(10))
    }
}
