import Foundation
import TestSupport
import Testing

/// Real `peerd run` daemons on several hosts of a `scripts/netlab.sh` lab
/// (network namespaces on one bridge, each host with its own D-Bus and
/// avahi-daemon), finding each other with mDNS: no `--peer` unless a test
/// says so. Every test brings up a lab of its own (its own namespace prefix
/// and /24) and takes it down at the end, passed or failed. Every wait polls
/// what the daemons log or store, with a 30 s deadline. How long discovery,
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
                #expect(daemon.log.count("replica running", "cluster=\(fingerprint)") == 1, "\(daemon.name)")
                for other in nodes where other.host != daemon.node.host {
                    try await lab.wait("\(daemon.node.name) discovering \(other.name)") {
                        daemon.log.count(
                            "peer discovered", "peer=\(other.replicaID)", "addr=\(lab.address(of: other.host)):4100")
                            > 0
                    }
                }
                #expect(daemon.log.count("peer discovered", "peer=\(daemon.node.replicaID)") == 0, "never itself")
                #expect(daemon.log.count("level=warning") == 0, "\(daemon.log.lines(containing: "level=warning"))")
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
                for pair in ["v=3", "role=peer", "cluster=\(fingerprint)"] {
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
            let d1 = try await lab.start(n1)
            let d2 = try await lab.start(n2)
            try await lab.converge([n1, n2])
            let live = try await lab.ok(["item", "create", "Live on n1", "2"], n1)

            let d3 = try await lab.start(n3)
            let joined = try await lab.converge(nodes)
            #expect(joined.map(\.event_count) == [4, 4, 4])
            #expect(try Peek.item(live, in: n3.data) != nil)
            for daemon in [d1, d2] {
                try await lab.wait("\(daemon.node.name) identifying n3") {
                    daemon.log.count("peer identified", "peer=\(n3.replicaID)") > 0
                }
            }

            let fromN3 = "remote=\(lab.address(of: 3))"
            let closedBefore = [d1, d2].map { $0.log.count("connection closed", fromN3) }
            let identifiedBefore = [d1, d2].map { $0.log.count("peer identified", "peer=\(n3.replicaID)") }
            try await lab.stop(d3, signal: SIGKILL)
            for (index, daemon) in [d1, d2].enumerated() {
                try await lab.wait("\(daemon.node.name) losing the connection to the killed n3") {
                    daemon.log.count("connection closed", fromN3) > closedBefore[index]
                }
                #expect(daemon.log.time(of: "connection closed", fromN3, index: closedBefore[index]) != nil)
            }

            // Edits while n3 is down: on both running nodes, and offline on n3's own data.
            let whileDown = [
                try await lab.ok(["item", "create", "While n3 was down, on n1", "3"], n1),
                try await lab.ok(["item", "create", "While n3 was down, on n2", "4"], n2),
            ]
            let offlineOnN3 = try await lab.ok(["item", "create", "Offline on the killed n3", "5"], n3)
            try await lab.converge([n1, n2])

            let restarted = try await lab.start(n3)
            for (index, daemon) in [d1, d2].enumerated() {
                try await lab.wait("\(daemon.node.name) identifying the restarted n3") {
                    daemon.log.count("peer identified", "peer=\(n3.replicaID)") > identifiedBefore[index]
                }
            }
            let final = try await lab.converge(nodes)
            #expect(final.map(\.event_count) == [7, 7, 7])
            for id in whileDown { #expect(try Peek.item(id, in: n3.data) != nil) }
            #expect(try Peek.item(offlineOnN3, in: n1.data) != nil)
            #expect(restarted.log.count("peer identified", "peer=\(n1.replicaID)") > 0)
            #expect(restarted.log.count("peer identified", "peer=\(n2.replicaID)") > 0)
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
            let d2 = try await lab.start(n2)
            let published = ["component=mdns", "published 'peerd-\(n1.replicaID.prefix(8))'"]
            try await lab.wait("n1 and n2 discovering each other and n1 publishing") {
                d1.log.count("peer discovered", "peer=\(n2.replicaID)") > 0
                    && d2.log.count("peer discovered", "peer=\(n1.replicaID)") > 0
                    && d1.log.lines(containingAll: published).count == 1
            }
            try await lab.converge([n1, n2])
            let fromN2 = "remote=\(lab.address(of: 2))"
            let closedBefore = d1.log.count("connection closed", fromN2)

            try await lab.avahiStop(1, signal: "KILL")
            try await lab.wait("n1 noticing that avahi-daemon is gone") {
                d1.log.count("component=mdns", "lost avahi-daemon") > 0
            }
            try await lab.avahiStart(1)
            try await lab.wait("n1 publishing again by itself") {
                d1.log.lines(containingAll: published).count == 2
            }
            #expect(d1.log.count("component=mdns", "avahi-daemon is available") == 1)

            try await lab.avahiStart(3)
            let d3 = try await lab.start(n3)
            let discovered = ["peer discovered", "peer=\(n1.replicaID)", "addr=\(lab.address(of: 1)):4100"]
            try await lab.wait("a new peer on host 3 discovering n1 by mDNS") {
                !d3.log.lines(containingAll: discovered).isEmpty
            }
            var services: [String] = []
            try await lab.wait("avahi-browse on host 3 resolving n1's service") {
                services = try await lab.browse(from: 3)
                return services.contains { $0.contains("\"id=\(n1.replicaID)\"") }
            }
            let line = try #require(services.first { $0.contains("\"id=\(n1.replicaID)\"") })
            #expect(line.contains(";\(lab.address(of: 1));\(Self.port);"), "\(line)")
            #expect(try await lab.converge(nodes).map(\.event_count) == [3, 3, 3])

            #expect(d1.isRunning, "the same process all along")
            #expect(
                d1.log.count("connection closed", fromN2) == closedBefore, "the mDNS outage left the TCP link alone")
            #expect(
                d1.log.count("level=warning", "component=mdns") <= 1, "\(d1.log.lines(containing: "component=mdns"))")
        }
    }

    @Test("no avahi-daemon on a host: peerd warns once, converges through --peer, and discovers once avahi starts")
    func noAvahiDaemonWarnsOnceAndStaticPeersWork() async throws {
        try await Lab.with(hosts: 2) { lab in
            let (_, nodes) = try await lab.cluster("n", hosts: [1, 2])
            let (n1, n2) = (nodes[0], nodes[1])
            try await lab.avahiStop(1)
            try await offlineEdits(lab, nodes)
            let d2 = try await lab.start(n2)
            let d1 = try await lab.start(n1, peers: ["\(lab.address(of: 2)):\(Self.port)"])
            #expect(try await lab.converge(nodes).map(\.event_count) == [2, 2])

            let warning = ["level=warning", "component=mdns"]
            // Watch n1's log for five seconds of its life: one warning, not one per retry.
            try await lab.wait("five seconds of n1's life") {
                Date().timeIntervalSince(d1.startedAt) >= 5 || d1.log.lines(containingAll: warning).count > 1
            }
            let warnings = d1.log.lines(containingAll: warning)
            #expect(warnings.count == 1, "\(warnings)")
            #expect(warnings.first?.contains("avahi-daemon is not running") == true, "\(warnings)")
            #expect(d1.log.count("peer discovered") == 0)

            try await lab.avahiStart(1)
            try await lab.wait("n1 publishing once avahi-daemon runs, and n1 and n2 discovering each other") {
                d1.log.count("component=mdns", "avahi-daemon is available") == 1
                    && d2.log.count("peer discovered", "peer=\(n1.replicaID)") > 0
                    && d1.log.count("peer discovered", "peer=\(n2.replicaID)") > 0
            }
            #expect(d1.log.lines(containingAll: warning).count == 1)
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
                let (own, foreign) = daemon.node.host <= 2 ? (a, fingerprintB) : (b, fingerprintA)
                // It saw the other cluster's services: not dialing them was a decision.
                try await lab.wait("\(daemon.node.name) discovering its cluster and passing over cluster \(foreign)") {
                    own.allSatisfy { node in
                        node.host == daemon.node.host
                            || daemon.log.count("peer discovered", "peer=\(node.replicaID)") > 0
                    } && daemon.log.count("ignoring services of cluster '\(foreign)'") > 0
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
                    #expect(daemon.log.lines(containing: other.replicaID).isEmpty, "\(daemon.name)")
                    let attempts = daemon.log.lines(containing: ip).filter {
                        $0.contains("msg=\"connection") || $0.contains("msg=\"dial") || $0.contains("msg=\"peer ")
                    }
                    #expect(attempts.isEmpty, "\(daemon.name): \(attempts)")
                }
                #expect(daemon.log.count("cluster key mismatch") == 0, "\(daemon.name)")
                #expect(daemon.log.count("msg=\"connection refused\"") == 0, "\(daemon.name)")
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
            var daemons: [LabDaemon] = []
            for node in nodes.prefix(3) { daemons.append(try await lab.start(node)) }
            let d4 = try await lab.start(n4, peers: ["\(lab.address(of: 1)):\(Self.port)"])
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
            #expect(!peers.contains { $0.source == "discovered" }, "\(peers)")
            #expect(d4.log.count("peer discovered") == 0, "mDNS found nothing from the host without multicast")
            for daemon in daemons {
                #expect(daemon.log.count("peer discovered", "peer=\(n4.replicaID)") == 0, "\(daemon.name)")
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
            #expect(daemons[1].log.count("peer discovered", "peer=\(relay.replicaID)", "role=relay") > 0)
            #expect(daemons[3].log.count("peer discovered") == 0, "mDNS found nothing from the host without multicast")

            // A write on the host mDNS does not reach goes through the relay to the others.
            let live = try await lab.ok(["item", "create", "Live on n4", "9"], replicas[2])
            #expect(try await lab.converge(nodes).map(\.event_count) == [5, 5, 5, 5])
            #expect(try Peek.item(live, in: replicas[0].data) != nil)
        }
    }
}
