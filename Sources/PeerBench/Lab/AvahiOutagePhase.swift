import Foundation
import NetworkLab

/// avahi-daemon going away under a running `peerd run`, and coming back.
struct AvahiOutagePhase {
    let lab: NetLab
    /// base on host 1, running, from ``ArrivalPhase``.
    let base: LabDaemon
    /// The share code of base's cluster.
    let code: String

    /// What the phase measured, in seconds after `avahi-start` returned.
    struct Results {
        /// Host 1's avahi-daemon SIGKILLed and started again → base's second `published` line.
        var republished = Double.nan
        /// A peerd on host 2 started while host 2 had no avahi-daemon; avahi-daemon started →
        /// both it and base have discovered each other.
        var discoveredOnceStarted = Double.nan
    }

    func run() async throws -> Results {
        var results = Results()
        progress("lab: avahi-daemon SIGKILLed and restarted under a running peerd")
        let published = base.log.count("component=mdns", "published")
        let lost = base.log.count("component=mdns", "lost avahi-daemon")
        try await lab.avahiStop(1, signal: "KILL")
        try await lab.wait("base noticing that avahi-daemon is gone") {
            base.log.count("component=mdns", "lost avahi-daemon") > lost
        }
        try await lab.avahiStart(1)
        results.republished = try await lab.wait("base publishing again by itself") {
            base.log.count("component=mdns", "published") > published
        }.seconds

        progress("lab: avahi-daemon started under a peerd that ran without it")
        try await lab.avahiStop(2)
        let (node, _) = try await lab.initNode("late", on: 2, joining: code)
        let late = try await lab.start(node)
        try await lab.wait("late warning that avahi-daemon is not running") {
            late.log.count("level=warning", "component=mdns") > 0
        }
        try await lab.avahiStart(2)
        results.discoveredOnceStarted = try await lab.wait("late and base discovering each other") {
            late.log.count("peer discovered", "peer=\(base.node.replicaID)") > 0
                && base.log.count("peer discovered", "peer=\(node.replicaID)") > 0
        }.seconds
        try await lab.stop(late)
        return results
    }
}
