import Foundation
import TestSupport
import Testing

/// The hub with real daemons: five replicas that know only the relay's
/// address (peer exchange tells them each other's), the relay killed
/// mid-sync and restarted, and two relays with replicas split across them.
@Suite("peerd run: hub topology")
struct RelayHubTests {
    let temp: TemporaryDirectory
    init() throws { temp = try TemporaryDirectory() }

    var replicaNames: [String] { (1...5).map { "r\($0)" } }

    /// Every replica is in the hub, connected to the relay alone.
    func inTheHub(_ replicas: [Daemon]) throws -> Bool {
        try replicas.allSatisfy { replica in
            let table = try replica.peerTable()
            return table.topology == "hub" && table.connectedRoles == ["relay"]
        }
    }

    @Test("five replicas converge through a relay, fall back to the mesh when it is killed, and return to it")
    func hubFallbackAndReturn() async throws {
        try temp.cluster("relay", replicaNames)
        var relay = try Daemon.start(data: temp.url("relay"), extra: ["--relay"])
        let replicas = try replicaNames.map { try Daemon.start(data: temp.url($0), peers: [relay.address]) }
        let everyone = [temp.url("relay")] + replicaNames.map { temp.url($0) }
        for (index, replica) in replicas.enumerated() { try replica.createItem("Item \(index)") }
        try Convergence.wait(everyone)

        // The hub: five connections (each replica to the relay), not the mesh's fifteen.
        try await Poll.eventually("every replica is connected to the relay alone", timeout: .seconds(15)) {
            try inTheHub(replicas)
        }
        #expect(try relay.peerTable().connectedRoles == Array(repeating: "peer", count: 5))
        let connections = try replicas.map { try $0.peerTable().connected.count }.reduce(0, +)
        #expect(connections == 5)

        // Killed mid-sync: writes are still on their way to and from it.
        for (index, replica) in replicas.enumerated() { try replica.createItem("In flight \(index)") }
        let relayPort = relay.port
        #expect(try relay.kill())
        let fallback = try await Poll.eventually(
            "every replica falls back to the mesh", timeout: .seconds(15),
            details: { replicas.map(\.stderr).joined(separator: "\n---\n") }
        ) {
            try replicas.allSatisfy { try $0.peerTable().topology == "mesh" }
        }
        #expect(fallback > .seconds(2), "the fallback waits 3 s for a relay to come back")
        try replicas[0].createItem("After the relay")
        try Convergence.wait(replicaNames.map { temp.url($0) })
        for replica in replicas {
            #expect(try !replica.peerTable().connected.isEmpty, "\(replica.name) is connected to other replicas")
        }

        // Back at its address: it catches up and the hub returns.
        relay = try Daemon.start(data: temp.url("relay"), extra: ["--relay", "--listen", "127.0.0.1:\(relayPort)"])
        // Each replica reaches it at its next redial: a relay's address is redialed at least every 2 s.
        try Convergence.wait(everyone, timeout: .seconds(45))
        try await Poll.eventually("the hub returns", timeout: .seconds(45)) { try inTheHub(replicas) }
        for replica in replicas { #expect(try replica.stop() == 0, "\(replica.stderr)") }
        #expect(try relay.stop() == 0, "\(relay.stderr)")
    }

    @Test("two relays sync, replicas split across them converge, and each dials the relay peer exchange names")
    func twoRelays() async throws {
        try temp.cluster("relay1", ["relay2", "a", "b", "c", "d"])
        let relay1 = try Daemon.start(data: temp.url("relay1"), extra: ["--relay"])
        let relay2 = try Daemon.start(data: temp.url("relay2"), peers: [relay1.address], extra: ["--relay"])
        let replicas = try [("a", relay1), ("b", relay1), ("c", relay2), ("d", relay2)].map { name, relay in
            try Daemon.start(data: temp.url(name), peers: [relay.address])
        }
        for (index, replica) in replicas.enumerated() { try replica.createItem("Item \(index)") }
        let statuses = try Convergence.wait(["relay1", "relay2", "a", "b", "c", "d"].map { temp.url($0) })
        #expect(Set(statuses.map(\.state_hash)).count == 1)
        #expect(statuses.allSatisfy { $0.event_count == 4 })
        #expect(try relay1.peerTable().connectedRoles.contains("relay"))
        // The peers message names each replica's role: a replica given one relay learns the other as a relay.
        try await Poll.eventually("every replica is connected to both relays", timeout: .seconds(15)) {
            try replicas.allSatisfy { try $0.peerTable().connectedRoles == ["relay", "relay"] }
        }
        for daemon in replicas + [relay2, relay1] { #expect(try daemon.stop() == 0, "\(daemon.stderr)") }
    }
}
