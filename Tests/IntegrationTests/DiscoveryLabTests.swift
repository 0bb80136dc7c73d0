import Foundation
import SyncProtocol
import TestSupport
import Testing

/// Real `peerd run` daemons on several hosts of a `scripts/netlab.sh` lab
/// (network namespaces on one bridge, each host with its own D-Bus and
/// avahi-daemon), finding each other with mDNS: no `--peer` unless a test
/// says so. Every test brings up a lab of its own (its own namespace prefix
/// and /24) and takes it down at the end, passed or failed. Every wait polls
/// what the daemons show through their API (`peerd peers --json`,
/// `/metrics`) or store, or what avahi-browse resolves, with a 30 s
/// deadline; none reads the daemons' log lines but the test of the one
/// warning a missing avahi-daemon is worth, which is about that line. How long discovery,
/// a first sync or noticing a gone peer takes is measured by
/// `peerd-bench lab`, not here.
@Suite(
    "peerd across lab hosts: mDNS discovery, crashes, avahi outages, clusters, peer exchange",
    .serialized,
    .disabled(if: Lab.unavailableReason != nil, Comment(rawValue: Lab.unavailableReason ?? ""))
)
struct DiscoveryLabTests {
    /// `peerd run`'s default port, which every host uses.
    static let port = 4100

    /// Waits until the daemon of `node` lists a peer that `matching` holds for; returns that peer.
    @discardableResult
    func waitForPeer(
        _ lab: NetLab, of node: LabNode, _ what: String, _ matching: @escaping @Sendable (LabPeer) -> Bool
    ) async throws -> LabPeer {
        var found: LabPeer?
        var last: [LabPeer] = []
        try await lab.wait("\(node.name) \(what)", details: { "\(node.name)'s peers: \(last)" }) {
            last = try await lab.peers(of: node)
            found = last.first(where: matching)
            return found != nil
        }
        return try #require(found)
    }

    /// Whether `peer` is `other`, learned by mDNS (`source` `discovered`) at its host's address.
    static func discovered(_ other: LabNode, in lab: NetLab) -> @Sendable (LabPeer) -> Bool {
        let address = "\(lab.address(of: other.host)):\(port)"
        return { $0.source == "discovered" && $0.replica_id == other.replicaID && $0.address == address }
    }

    /// Whether `peer` is `other` at its host's address, learned by mDNS or from a peer (which keeps its row's
    /// `source` when mDNS finds it too): without a `--peer` anywhere, every address came from mDNS.
    static func found(_ other: LabNode, in lab: NetLab) -> @Sendable (LabPeer) -> Bool {
        let address = "\(lab.address(of: other.host)):\(port)"
        return {
            ["discovered", "exchanged"].contains($0.source) && $0.replica_id == other.replicaID && $0.address == address
        }
    }

    /// Whether `peer` is `other` connected (a hello proven, dialed or inbound).
    static func connected(_ other: LabNode) -> @Sendable (LabPeer) -> Bool {
        { $0.replica_id == other.replicaID && $0.state == "connected" }
    }

    /// The sum of `metric`'s samples on `node`'s `/metrics` (inside its host).
    func metric(_ lab: NetLab, _ metric: String, of node: LabNode) async throws -> Double {
        let result = try await lab.exec(node.host, ["curl", "-s", "-m", "5", "http://127.0.0.1:4000/metrics"])
        guard result.status == 0 else { throw LabFailure("GET /metrics on \(node.name): \(result)") }
        return result.stdout.split(separator: "\n").filter { $0.hasPrefix(metric + " ") || $0.hasPrefix(metric + "{") }
            .compactMap { Double($0.split(separator: " ").last ?? "") }.reduce(0, +)
    }

    /// No handshake failed and no connection was refused on `node`: nothing went wrong between the peers.
    func expectNoFailedConnections(_ lab: NetLab, _ node: LabNode) async throws {
        #expect(try await metric(lab, "peersync_handshake_failures_total", of: node) == 0, "\(node.name)")
        #expect(try await metric(lab, "peersync_connections_refused_total", of: node) == 0, "\(node.name)")
    }

    /// Creates one item on each node while no daemon runs; returns the item ids.
    @discardableResult
    func offlineEdits(_ lab: NetLab, _ nodes: [LabNode]) async throws -> [String] {
        var ids: [String] = []
        for node in nodes { ids.append(try await lab.ok(["item", "create", "Made on \(node.name)", "1"], node)) }
        return ids
    }

    @Test("three hosts without --peer find each other by mDNS and converge; avahi-browse shows their TXT")
    func threeHostsFindEachOtherByMDNS() async throws {
        try await Lab.with(hosts: 3) { lab in
            let (fingerprint, nodes) = try await lab.cluster("n", hosts: [1, 2, 3])
            try await offlineEdits(lab, nodes)
            var daemons: [LabDaemon] = []
            for node in nodes { daemons.append(try await lab.start(node)) }
            let statuses = try await lab.converge(nodes)
            #expect(statuses.map(\.event_count) == [3, 3, 3])

            for daemon in daemons {
                for other in nodes where other.host != daemon.node.host {
                    try await waitForPeer(lab, of: daemon.node, "finding \(other.name)", Self.found(other, in: lab))
                }
                let peers = try await lab.peers(of: daemon.node)
                #expect(!peers.contains { $0.replica_id == daemon.node.replicaID }, "never itself: \(peers)")
                try await expectNoFailedConnections(lab, daemon.node)
            }

            var services: [String] = []
            try await lab.wait("avahi-browse on host 3 resolving the three services") {
                services = try await lab.browse(from: 3)
                return nodes.allSatisfy { node in services.contains { $0.contains("\"id=\(node.replicaID)\"") } }
            }
            for node in nodes {
                let line = try #require(services.first { $0.contains("\"id=\(node.replicaID)\"") })
                #expect(line.contains(";peerd-\(node.replicaID.prefix(8));_peersync._tcp;local;"), "\(line)")
                #expect(line.contains(";\(lab.address(of: node.host));\(Self.port);"), "\(line)")
                for pair in ["v=\(WireProtocol.version)", "role=peer", "cluster=\(fingerprint)"] {
                    #expect(line.contains("\"\(pair)\""), "\(line)")
                }
            }
        }
    }

    @Test("a node that starts later catches up; one killed with kill -9 is redialed after its restart and catches up")
    func lateJoinerAndKilledNodeCatchUp() async throws {
        try await Lab.with(hosts: 3) { lab in
            let (_, nodes) = try await lab.cluster("n", hosts: [1, 2, 3])
            let (n1, n2, n3) = (nodes[0], nodes[1], nodes[2])
            try await offlineEdits(lab, nodes)
            _ = try await lab.start(n1)
            _ = try await lab.start(n2)
            try await lab.converge([n1, n2])
            let live = try await lab.ok(["item", "create", "Live on n1", "2"], n1)

            let d3 = try await lab.start(n3)
            let joined = try await lab.converge(nodes)
            #expect(joined.map(\.event_count) == [4, 4, 4])
            #expect(try Peek.item(live, in: n3.data) != nil)
            for node in [n1, n2] { try await waitForPeer(lab, of: node, "connected to n3", Self.connected(n3)) }

            try await lab.stop(d3, signal: SIGKILL)
            for node in [n1, n2] {
                try await lab.wait("\(node.name) losing the connection to the killed n3") {
                    try await !lab.peers(of: node).contains(where: Self.connected(n3))
                }
            }

            // Edits while n3 is down: on both running nodes, and offline on n3's own data.
            let whileDown = [
                try await lab.ok(["item", "create", "While n3 was down, on n1", "3"], n1),
                try await lab.ok(["item", "create", "While n3 was down, on n2", "4"], n2),
            ]
            let offlineOnN3 = try await lab.ok(["item", "create", "Offline on the killed n3", "5"], n3)
            try await lab.converge([n1, n2])

            _ = try await lab.start(n3)
            for node in [n1, n2] {
                try await waitForPeer(lab, of: node, "connected to the restarted n3", Self.connected(n3))
                try await waitForPeer(lab, of: n3, "restarted, connected to \(node.name)", Self.connected(node))
            }
            let final = try await lab.converge(nodes)
            #expect(final.map(\.event_count) == [7, 7, 7])
            for id in whileDown { #expect(try Peek.item(id, in: n3.data) != nil) }
            #expect(try Peek.item(offlineOnN3, in: n1.data) != nil)
        }
    }

    @Test("avahi-daemon killed and restarted under a running peerd: it publishes again and a new peer finds it by mDNS")
    func avahiCrashUnderARunningPeerd() async throws {
        try await Lab.with(hosts: 3) { lab in
            let (_, nodes) = try await lab.cluster("n", hosts: [1, 2, 3])
            let (n1, n2, n3) = (nodes[0], nodes[1], nodes[2])
            // Host 3's avahi-daemon is down until after the crash and restart on host 1: what host 3
            // learns later cannot come from a cache filled before the crash (a crashed daemon sends no
            // goodbye, so host 2 keeps n1's old record for an hour).
            try await lab.avahiStop(3)
            try await offlineEdits(lab, nodes)
            let d1 = try await lab.start(n1)
            _ = try await lab.start(n2)
            // n2 finding n1 by mDNS is n1 publishing.
            try await waitForPeer(lab, of: n1, "discovering n2", Self.discovered(n2, in: lab))
            try await waitForPeer(lab, of: n2, "discovering n1", Self.discovered(n1, in: lab))
            try await lab.converge([n1, n2])
            let link = try await waitForPeer(lab, of: n1, "connected to n2", Self.connected(n2))

            try await lab.avahiStop(1, signal: "KILL")
            try await lab.avahiStart(1)

            // Host 3's avahi-daemon starts only now, with nothing cached: finding n1 there is n1 having
            // published again on its own host's new avahi-daemon.
            try await lab.avahiStart(3)
            _ = try await lab.start(n3)
            try await waitForPeer(lab, of: n3, "discovering n1 by mDNS", Self.discovered(n1, in: lab))
            var services: [String] = []
            try await lab.wait("avahi-browse on host 3 resolving n1's service") {
                services = try await lab.browse(from: 3)
                return services.contains { $0.contains("\"id=\(n1.replicaID)\"") }
            }
            let line = try #require(services.first { $0.contains("\"id=\(n1.replicaID)\"") })
            #expect(line.contains(";\(lab.address(of: 1));\(Self.port);"), "\(line)")
            #expect(try await lab.converge(nodes).map(\.event_count) == [3, 3, 3])

            #expect(d1.isRunning, "the same process all along")
            // The mDNS outage left the TCP link alone: n1 still lists n2 on the link it had (an inbound link
            // that had closed would not come back as the same row).
            let after = try await lab.peers(of: n1).filter(Self.connected(n2))
            #expect(after.map(\.source) == [link.source], "\(after)")
            try await expectNoFailedConnections(lab, n1)
        }
    }

    @Test("no avahi-daemon on a host: peerd warns once, converges through --peer, and discovers once avahi starts")
    func noAvahiDaemonWarnsOnceAndStaticPeersWork() async throws {
        try await Lab.with(hosts: 2) { lab in
            let (_, nodes) = try await lab.cluster("n", hosts: [1, 2])
            let (n1, n2) = (nodes[0], nodes[1])
            try await lab.avahiStop(1)
            try await offlineEdits(lab, nodes)
            _ = try await lab.start(n2)
            let d1 = try await lab.start(n1, peers: ["\(lab.address(of: 2)):\(Self.port)"])
            #expect(try await lab.converge(nodes).map(\.event_count) == [2, 2])

            // mDNS's warnings: `discovery.notice` events at warning level.
            func warnings() -> [LogRecord] {
                d1.log.lines.compactMap { LogRecord(parsing: $0) }.filter {
                    $0.event == .discoveryNotice && $0.level == .warning
                }
            }
            // Watch n1's log for five seconds of its life: one warning, not one per retry.
            try await lab.wait("five seconds of n1's life") {
                Date().timeIntervalSince(d1.startedAt) >= 5 || warnings().count > 1
            }
            #expect(warnings().count == 1, "\(warnings().map(\.line))")
            #expect(try await !lab.peers(of: n1).contains { $0.source == "discovered" })

            try await lab.avahiStart(1)
            // n2 (no --peer) finding n1 by mDNS is n1 publishing once its avahi-daemon runs; n1's row for n2
            // stays the configured one.
            try await waitForPeer(lab, of: n2, "discovering n1", Self.discovered(n1, in: lab))
            #expect(warnings().count == 1)
        }
    }

    @Test("two clusters on one network: each converges within itself and never dials the other")
    func twoClustersNeverMeet() async throws {
        try await Lab.with(hosts: 4) { lab in
            let (fingerprintA, a) = try await lab.cluster("a", hosts: [1, 2])
            let (fingerprintB, b) = try await lab.cluster("b", hosts: [3, 4])
            #expect(fingerprintA != fingerprintB)
            try await offlineEdits(lab, a + b)
            var daemons: [LabDaemon] = []
            for node in a + b { daemons.append(try await lab.start(node)) }
            let statusesA = try await lab.converge(a)
            let statusesB = try await lab.converge(b)
            #expect(statusesA.map(\.event_count) == [2, 2] && statusesB.map(\.event_count) == [2, 2])
            #expect(statusesA[0].state_hash != statusesB[0].state_hash)

            for daemon in daemons {
                let (own, others, foreign) = daemon.node.host <= 2 ? (a, b, fingerprintB) : (b, a, fingerprintA)
                for node in own where node.host != daemon.node.host {
                    try await waitForPeer(
                        lab, of: daemon.node, "discovering \(node.name)", Self.discovered(node, in: lab))
                }
                // Its host resolves the other cluster's services: not dialing them was a decision.
                try await lab.wait("host \(daemon.node.host) resolving the services of cluster \(foreign)") {
                    let services = try await lab.browse(from: daemon.node.host)
                    return others.allSatisfy { other in
                        services.contains {
                            $0.contains("\"id=\(other.replicaID)\"") && $0.contains("\"cluster=\(foreign)\"")
                        }
                    }
                }
            }
            for daemon in daemons {
                let (own, others) = daemon.node.host <= 2 ? (a, b) : (b, a)
                let ownPeers = Set(own.map(\.replicaID)).subtracting([daemon.node.replicaID])
                var peers: [LabPeer] = []
                // peers.json is rewritten every second: wait for a snapshot taken since the connection.
                try await lab.wait("\(daemon.node.name)'s peer list naming its cluster's other node") {
                    peers = try await lab.peers(of: daemon.node)
                    return Set(peers.compactMap(\.replica_id)).isSuperset(of: ownPeers)
                }
                let ids = Set(peers.compactMap(\.replica_id))
                #expect(ids == ownPeers, "\(daemon.name): \(peers)")
                for other in others {
                    let ip = lab.address(of: other.host)
                    #expect(!ids.contains(other.replicaID))
                    #expect(!peers.contains { $0.address?.hasPrefix("\(ip):") == true }, "\(daemon.name)")
                }
                // No dial of the other cluster: no handshake failed on a key mismatch, none was refused.
                try await expectNoFailedConnections(lab, daemon.node)
            }
        }
    }

    @Test("a host with multicast blocked and one --peer meets the others through peer exchange")
    func multicastBlockedHostUsesPeerExchange() async throws {
        try await Lab.with(hosts: 4) { lab in
            let (_, nodes) = try await lab.cluster("n", hosts: [1, 2, 3, 4])
            let (n1, n4) = (nodes[0], nodes[3])
            try await lab.blockMulticast(4)
            try await offlineEdits(lab, nodes)
            for node in nodes.prefix(3) { _ = try await lab.start(node) }
            _ = try await lab.start(n4, peers: ["\(lab.address(of: 1)):\(Self.port)"])
            #expect(try await lab.converge(nodes).map(\.event_count) == [4, 4, 4, 4])

            var peers: [LabPeer] = []
            try await lab.wait("n4 connected to n2 and n3 at addresses peer exchange gave it") {
                peers = try await lab.peers(of: n4)
                return nodes[1...2].allSatisfy { node in
                    peers.contains {
                        $0.source == "exchanged" && $0.replica_id == node.replicaID && $0.state == "connected"
                            && $0.address == "\(lab.address(of: node.host)):\(Self.port)"
                    }
                }
            }
            #expect(
                peers.contains {
                    $0.source == "configured" && $0.replica_id == n1.replicaID && $0.state == "connected"
                },
                "\(peers)")
            #expect(!peers.contains { $0.source == "discovered" }, "mDNS found nothing from n4: \(peers)")
            for node in nodes.prefix(3) {
                let found = try await lab.peers(of: node).filter {
                    $0.source == "discovered" && $0.replica_id == n4.replicaID
                }
                #expect(found.isEmpty, "\(node.name) found n4 by mDNS: \(found)")
            }

            let live = try await lab.ok(["item", "create", "Live on n4", "9"], n4)
            #expect(try await lab.converge(nodes).map(\.event_count) == [5, 5, 5, 5])
            #expect(try Peek.item(live, in: nodes[2].data) != nil)
        }
    }

    @Test(
        "a relay found by mDNS (TXT role=relay) turns the replicas to the hub; a host without multicast syncs through it by --peer"
    )
    func relayFoundByMDNS() async throws {
        try await Lab.with(hosts: 4) { lab in
            let (_, nodes) = try await lab.cluster("n", hosts: [1, 2, 3, 4])
            let (relay, replicas) = (nodes[0], Array(nodes[1...]))
            try await lab.blockMulticast(4)
            try await offlineEdits(lab, nodes)
            var daemons = [try await lab.start(relay, extra: ["--relay"])]
            for node in replicas.prefix(2) { daemons.append(try await lab.start(node)) }
            daemons.append(try await lab.start(replicas[2], peers: ["\(lab.address(of: relay.host)):\(Self.port)"]))
            #expect(try await lab.converge(nodes).map(\.event_count) == [4, 4, 4, 4])

            var services: [String] = []
            try await lab.wait("avahi-browse on host 2 resolving the relay with role=relay") {
                services = try await lab.browse(from: 2)
                return services.contains { $0.contains("\"id=\(relay.replicaID)\"") && $0.contains("\"role=relay\"") }
            }
            for node in replicas {
                try await lab.wait("\(node.name) in the hub, connected to the relay alone") {
                    let table = try await lab.ok(["peers"], node)
                    let connected = try await lab.peers(of: node).filter { $0.state == "connected" }
                    return table.hasPrefix("topology hub") && connected.map(\.replica_id) == [relay.replicaID]
                        && connected.allSatisfy { $0.role == "relay" }
                }
            }
            let found = try await lab.peers(of: replicas[0]).filter(Self.discovered(relay, in: lab))
            #expect(found.map(\.role) == ["relay"], "\(found)")
            let blocked = try await lab.peers(of: replicas[2]).filter { $0.source == "discovered" }
            #expect(blocked.isEmpty, "mDNS found nothing from the host without multicast: \(blocked)")

            // A write on the host mDNS does not reach goes through the relay to the others.
            let live = try await lab.ok(["item", "create", "Live on n4", "9"], replicas[2])
            #expect(try await lab.converge(nodes).map(\.event_count) == [5, 5, 5, 5])
            #expect(try Peek.item(live, in: replicas[0].data) != nil)
        }
    }
}
