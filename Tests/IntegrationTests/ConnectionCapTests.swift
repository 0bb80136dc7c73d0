import Foundation
import TestSupport
import Testing

/// `peerd run --max-connections`: the peer connection cap, its defaults by
/// role, and the descriptor limit lowering it (docs/cli.md).
@Suite("peerd run --max-connections")
struct ConnectionCapTests {
    let temp: TemporaryDirectory
    init() throws { temp = try TemporaryDirectory() }

    /// `sync.max_connections` of `GET /status`.
    func cap(_ daemon: Daemon) throws -> Int? {
        let text = try daemon.api!.request("GET", "/status").text
        let json = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
        return (json?["sync"] as? [String: Any])?["max_connections"] as? Int
    }

    @Test("a relay keeps up to 2048 connections by default and a replica 64, as /status and the log say")
    func defaultsByRole() throws {
        try temp.cluster("relay", ["a"])
        let relay = try Daemon.start(data: temp.url("relay"), extra: ["--relay"])
        let a = try Daemon.start(data: temp.url("a"))
        #expect(try cap(relay) == 2_048)
        #expect(try cap(a) == 64)
        #expect(relay.events(.listening, ["max_connections": "2048"]).count == 1, "\(relay.stderr)")
        #expect(relay.events(.peersDescriptorsLow).isEmpty, "\(relay.stderr)")
        #expect(try a.stop() == 0)
        #expect(try relay.stop() == 0)
    }

    @Test("max-connections in peerd.conf caps a relay: a third replica's connection is closed as soon as it is up")
    func capFromConfigFile() throws {
        try temp.cluster("relay", ["a", "b", "c"])
        try "relay = true\nmax-connections = 2\n".write(
            to: temp.url("relay").appendingPathComponent("peerd.conf"), atomically: true, encoding: .utf8)
        let relay = try Daemon.start(data: temp.url("relay"))
        #expect(try cap(relay) == 2)
        let a = try Daemon.start(data: temp.url("a"), peers: [relay.address])
        let b = try Daemon.start(data: temp.url("b"), peers: [relay.address])
        let c = try Daemon.start(data: temp.url("c"), peers: [relay.address])
        #expect(
            relay.waitForEvent(.connectionClosed, ["reason": "too many connections (2)"]), "\(relay.stderr)")
        for daemon in [c, b, a, relay] { #expect(try daemon.stop() == 0) }
    }

    @Test("a descriptor limit too low for the cap lowers it, and says so in the log and /status")
    func descriptorLimitLowersTheCap() throws {
        try temp.peerdOK(["init"], "relay")
        // 600 descriptors: 256 reserved, 64 handshakes, 32 HTTP connections at least; 248 left for peers.
        let relay = try Daemon.start(data: temp.url("relay"), extra: ["--relay"], descriptorLimit: 600)
        #expect(try cap(relay) == 248)
        let warnings = relay.events(.peersDescriptorsLow, ["wanted": "2048", "max_connections": "248"])
        #expect(warnings.count == 1, "\(relay.stderr)")
        #expect(warnings.first?["descriptor_limit"] == "600")
        #expect(try relay.stop() == 0)
    }

    @Test(
        "a bad --max-connections is refused with what it must be",
        arguments: ["0", "lots", "-3", "65537"])
    func badValueIsRefused(_ value: String) throws {
        try temp.peerdOK(["init"], "a")
        let result = try Executables.peerd(
            ["run", "--http", "off", "--no-mdns", "--max-connections", value], data: temp.url("a"))
        #expect(result.status == 78)
        #expect(
            result.stderr.contains("--max-connections must be a whole number from 1 to 65536, not \"\(value)\""),
            "\(result.stderr)")
    }
}
