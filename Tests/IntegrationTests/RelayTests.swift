import Foundation
import TestSupport
import Testing

/// A relay among real `peerd run` processes on loopback (docs/relay.md,
/// docs/topology.md): store-and-forward, the hub and its fallback to the
/// mesh, two relays, and server offsets across a kill -9.
@Suite("peerd run --relay")
struct RelayTests {
    let temp: TemporaryDirectory
    init() throws { temp = try TemporaryDirectory() }

    @Test("store-and-forward: b receives a's events from the relay alone, after a has stopped")
    func storeAndForward() async throws {
        try temp.cluster("relay", ["a", "b"])
        let relay = try Daemon.start(data: temp.url("relay"), extra: ["--relay"])
        let a = try Daemon.start(data: temp.url("a"), peers: [relay.address])
        for name in ["Apples", "Pears", "Plums"] { try a.createItem(name) }
        try Convergence.wait([temp.url("relay"), temp.url("a")])
        #expect(try a.stop() == 0, "\(a.stderr)")

        let b = try Daemon.start(data: temp.url("b"), peers: [relay.address])
        try Convergence.wait([temp.url("relay"), temp.url("b")])
        #expect(try Peek.eventCount(temp.url("b")) == Peek.eventCount(temp.url("a")))
        #expect(try Peek.cursor(temp.url("b")) == Peek.cursor(temp.url("a")))
        #expect(try b.peerTable().connectedRoles == ["relay"])
        #expect(try relay.peerTable().topology == "hub")
        #expect(try b.stop() == 0, "\(b.stderr)")
        #expect(try relay.stop() == 0, "\(relay.stderr)")
    }

    @Test("a relay says role relay in /status, and a replica shows it in /peers and /metrics")
    func roleIsShown() async throws {
        try temp.cluster("relay", ["a"])
        let relay = try Daemon.start(data: temp.url("relay"), extra: ["--relay"])
        let a = try Daemon.start(data: temp.url("a"), peers: [relay.address])
        try await Poll.eventually("a turns to the hub", timeout: .seconds(15), details: { a.stderr }) {
            try a.peerTable().topology == "hub"
        }
        let status = try relay.api!.request("GET", "/status").text
        #expect(status.contains(#""role":"relay""#), "\(status)")
        let table = try a.peerTable()
        #expect(table.topology_mode == "auto")
        #expect(table.connectedRoles == ["relay"])
        #expect(try a.metric(#"peersync_topology{mode="hub"}"#) == 1)
        #expect(try a.metric(#"peersync_peers_connected_by_role{role="relay"}"#) == 1)
        #expect(try relay.metric(#"peersync_peers_connected_by_role{role="peer"}"#) == 1)
        let printed = try temp.peerdOK(["peers"], "a")
        #expect(printed.hasPrefix("topology hub (--topology auto)"), "\(printed)")
        #expect(printed.contains("relay"), "\(printed)")
        #expect(try a.stop() == 0)
        #expect(try relay.stop() == 0)
    }

    @Test("relay = true and topology = hub in peerd.conf do what --relay and --topology hub do")
    func configFile() throws {
        try temp.cluster("relay", ["a"])
        try "relay = true\n".write(
            to: temp.url("relay").appendingPathComponent("peerd.conf"), atomically: true, encoding: .utf8)
        try "topology = hub\n".write(
            to: temp.url("a").appendingPathComponent("peerd.conf"), atomically: true, encoding: .utf8)
        let relay = try Daemon.start(data: temp.url("relay"))
        let a = try Daemon.start(data: temp.url("a"), peers: [relay.address])
        #expect(try relay.api!.request("GET", "/status").text.contains(#""role":"relay""#))
        let table = try a.peerTable()
        #expect(table.topology_mode == "hub")
        #expect(table.topology == "hub", "hub mode is the hub before any relay is connected")
        #expect(try a.stop() == 0)
        #expect(try relay.stop() == 0)
    }
}
