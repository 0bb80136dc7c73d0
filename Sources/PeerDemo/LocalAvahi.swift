import ChildProcesses
import Foundation

/// How the demo's daemons find each other: mDNS through this machine's
/// avahi-daemon when one runs or the demo can start one, else static
/// `--peer` addresses on loopback.
enum DemoDiscovery {
    /// mDNS; `started` when the demo started avahi-daemon (and stops it at the end).
    case mdns(started: Bool)
    /// `--peer` addresses, and why not mDNS.
    case staticPeers(reason: String)

    var usesMDNS: Bool {
        if case .mdns = self { return true }
        return false
    }

    /// One line for the start of the demo.
    var description: String {
        switch self {
        case .mdns(let started):
            let which =
                started ? "an avahi-daemon started for this demo (stopped at the end)" : "the running avahi-daemon"
            return "peers find each other with mDNS, through \(which)"
        case .staticPeers(let reason):
            return "peers are given with --peer on 127.0.0.1 (no mDNS: \(reason))"
        }
    }

    /// Looks for a running avahi-daemon; as root with a D-Bus system bus,
    /// starts one (and registers its stop with `cleanup`).
    static func choose(allowMDNS: Bool, cleanup: DemoCleanup) -> DemoDiscovery {
        guard allowMDNS else { return .staticPeers(reason: "--no-mdns") }
        let candidates = ["/usr/sbin/avahi-daemon", "/usr/bin/avahi-daemon", "/sbin/avahi-daemon"]
        guard let avahi = candidates.first(where: FileManager.default.isExecutableFile(atPath:)) else {
            return .staticPeers(reason: "avahi-daemon is not installed")
        }
        if isRunning(avahi) { return .mdns(started: false) }
        guard geteuid() == 0 else {
            return .staticPeers(reason: "avahi-daemon is not running, and only root may start it")
        }
        let buses = ["/run/dbus/system_bus_socket", "/var/run/dbus/system_bus_socket"]
        guard buses.contains(where: FileManager.default.fileExists(atPath:)) else {
            return .staticPeers(reason: "avahi-daemon is not running, and there is no D-Bus system bus to start it on")
        }
        guard (try? ChildProcess.run(URL(fileURLWithPath: avahi), ["--daemonize"]))?.status == 0,
            Poll.until(timeout: .seconds(5), every: .milliseconds(20), { isRunning(avahi) })
        else {
            return .staticPeers(reason: "avahi-daemon did not start (run `\(avahi) --debug` to see why)")
        }
        cleanup.atCleanup { _ = try? ChildProcess.run(URL(fileURLWithPath: avahi), ["--kill"]) }
        return .mdns(started: true)
    }

    /// `avahi-daemon --check`: exit 0 when a daemon runs.
    private static func isRunning(_ avahi: String) -> Bool {
        (try? ChildProcess.run(URL(fileURLWithPath: avahi), ["--check"]))?.status == 0
    }
}
