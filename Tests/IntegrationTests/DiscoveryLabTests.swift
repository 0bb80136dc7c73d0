import Foundation
import TestSupport
import Testing

/// Real `peerd run` daemons on several hosts of a `scripts/netlab.sh` lab
/// (network namespaces on one bridge, each host with its own D-Bus and
/// avahi-daemon), finding each other with mDNS: no `--peer` unless a test
/// says so. Every test brings up a lab of its own (its own namespace prefix
/// and /24) and takes it down at the end, passed or failed. Every wait polls
/// what the daemons log or store, with a 30 s deadline.
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
                for pair in ["v=1", "role=peer", "cluster=\(fingerprint)"] {
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
            let killedAt = try await lab.stop(d3, signal: SIGKILL)
            for (index, daemon) in [d1, d2].enumerated() {
                try await lab.wait("\(daemon.node.name) losing the connection to the killed n3") {
                    daemon.log.count("connection closed", fromN3) > closedBefore[index]
                }
                let noticed = try #require(daemon.log.time(of: "connection closed", fromN3, index: closedBefore[index]))
                print(
                    "lab: kill -9 of n3 → \(daemon.node.name)'s connection closed: \(Self.text(noticed, since: killedAt))"
                )
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
            let republished = try await lab.wait("n1 publishing again by itself") {
                d1.log.lines(containingAll: published).count == 2
            }
            print("lab: avahi-daemon restarted → peerd published again: \(Self.text(republished))")
            #expect(d1.log.count("component=mdns", "avahi-daemon is available") == 1)

            try await lab.avahiStart(3)
            let d3 = try await lab.start(n3)
            let discovered = ["peer discovered", "peer=\(n1.replicaID)", "addr=\(lab.address(of: 1)):4100"]
            try await lab.wait("a new peer on host 3 discovering n1 by mDNS") {
                !d3.log.lines(containingAll: discovered).isEmpty
            }
            if let found = d3.log.lines(containingAll: discovered).first.flatMap(LabLog.timestamp) {
                print(
                    "lab: new peer on host 3 (fresh avahi-daemon) → n1 discovered: \(Self.text(found, since: d3.startedAt))"
                )
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
            let started = try await lab.wait(
                "n1 publishing once avahi-daemon runs, and n1 and n2 discovering each other"
            ) {
                d1.log.count("component=mdns", "avahi-daemon is available") == 1
                    && d2.log.count("peer discovered", "peer=\(n1.replicaID)") > 0
                    && d1.log.count("peer discovered", "peer=\(n2.replicaID)") > 0
            }
            print("lab: avahi-daemon started under a running peerd → both discovered: \(Self.text(started))")
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

    /// A new replica's arrival: seconds from `netlab.sh spawn` of its `peerd run` to its
    /// `peer discovered` and `peer identified` lines for the existing node, and to holding all its events.
    struct Arrival {
        var discovered: Double?
        var identified: Double
        var caughtUp: Double
    }

    @Test("figures: a new host's first sync, and how soon a killed or a hung peer is noticed")
    func figures() async throws {
        try await Lab.with(hosts: 2) { lab in
            let (base, _) = try await lab.initNode("base", on: 1)
            let code = try await lab.ok(["cluster-code"], base)
            try await lab.ok(["import", try Self.bulk(500, in: lab)], base)
            let total = try Peek.eventCount(base.data)
            let d1 = try await lab.start(base)
            try await lab.wait("base publishing") { d1.log.count("component=mdns", "published") > 0 }
            let fromHost2 = "remote=\(lab.address(of: 2))"

            // A fresh replica on host 2, again and again. Warm: host 2's avahi-daemon has run all along
            // and holds base's service in its cache. Cold: it was restarted just before (a host that
            // just came up), so the first browse asks the network.
            var runs = 0
            func arrive(cold: Bool) async throws -> (Arrival, LabDaemon) {
                runs += 1
                let (node, _) = try await lab.initNode("new\(runs)", on: 2, joining: code)
                if cold {
                    try await lab.avahiStop(2)
                    try await lab.avahiStart(2)
                }
                let daemon = try await lab.start(node)
                try await lab.wait("new\(runs) holding base's \(total) events", every: .milliseconds(5)) {
                    try Peek.eventCount(node.data) == total
                }
                let caughtUp = Date().timeIntervalSince(daemon.startedAt)
                let identified = try #require(daemon.log.time(of: "peer identified", "peer=\(base.replicaID)"))
                let discovered = daemon.log.time(of: "peer discovered", "peer=\(base.replicaID)")
                // Stopped or killed later, it must be withdrawn from base: first base must have found it.
                try await lab.wait("base discovering new\(runs)") {
                    d1.log.count("peer discovered", "peer=\(node.replicaID)") > 0
                }
                let arrival = Arrival(
                    discovered: discovered?.timeIntervalSince(daemon.startedAt),
                    identified: identified.timeIntervalSince(daemon.startedAt), caughtUp: caughtUp)
                return (arrival, daemon)
            }
            func leave(_ daemon: LabDaemon) async throws {
                try await lab.stop(daemon)
                try await lab.wait("base seeing \(daemon.node.name)'s service withdrawn") {
                    d1.log.count("peer withdrawn", "peer=\(daemon.node.replicaID)") > 0
                }
            }
            var warm: [Arrival] = []
            var cold: [Arrival] = []
            for _ in 1...5 {
                let (arrival, daemon) = try await arrive(cold: false)
                warm.append(arrival)
                try await leave(daemon)
            }
            var newcomer: LabDaemon?
            for run in 1...5 {
                let (arrival, daemon) = try await arrive(cold: true)
                cold.append(arrival)
                if run < 5 { try await leave(daemon) } else { newcomer = daemon }
            }

            // kill -9: the kernel closes the dead process's sockets, so base hears it at once.
            let victim = try #require(newcomer)
            let closedBeforeKill = d1.log.count("connection closed", fromHost2)
            let killedAt = try await lab.stop(victim, signal: SIGKILL)
            try await lab.wait("base losing the killed peer") {
                d1.log.count("connection closed", fromHost2) > closedBeforeKill
            }
            let killNoticed = try #require(d1.log.time(of: "connection closed", fromHost2, index: closedBeforeKill))
                .timeIntervalSince(killedAt)
            try await lab.wait("base seeing the killed peer's service withdrawn") {
                d1.log.count("peer withdrawn", "peer=\(victim.node.replicaID)") > 0
            }

            // SIGSTOP: a hung process (or a host that vanished) keeps its connections open and silent;
            // only the dead-peer timeout notices.
            let (hungNode, _) = try await lab.initNode("hung", on: 2, joining: code)
            let hung = try await lab.start(hungNode)
            try await lab.wait("base identifying the next peer") {
                d1.log.count("peer identified", "peer=\(hungNode.replicaID)") > 0
            }
            try await lab.converge([base, hungNode])
            let closedBeforeStop = d1.log.count("connection closed", fromHost2)
            let stoppedAt = Date()
            try hung.send(SIGSTOP)
            try await lab.wait("base closing the silent connection") {
                d1.log.count("connection closed", fromHost2) > closedBeforeStop
            }
            let closedLine = d1.log.lines(containing: "connection closed", fromHost2)[closedBeforeStop]
            let hangNoticed = try #require(LabLog.timestamp(closedLine)).timeIntervalSince(stoppedAt)
            let reason = closedLine.range(of: "reason=").map { String(closedLine[$0.upperBound...]) } ?? "?"
            try await lab.stop(hung, signal: SIGKILL)

            func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
            func row(_ what: String, _ values: [Double]) -> String {
                let list = values.map { String(format: "%.2f", $0) }.joined(separator: ", ")
                return "  \(what) [\(list)] s, median " + String(format: "%.2f s", median(values))
            }
            print(
                """
                lab figures (\(total) events on the existing host; seconds from `peerd run` on the new host):
                \(row("warm avahi cache: → peer discovered", warm.compactMap(\.discovered)))
                \(row("warm avahi cache: → peer identified", warm.map(\.identified)))
                \(row("warm avahi cache: → all events held", warm.map(\.caughtUp)))
                \(row("cold avahi cache: → peer discovered", cold.compactMap(\.discovered)))
                \(row("cold avahi cache: → peer identified", cold.map(\.identified)))
                \(row("cold avahi cache: → all events held", cold.map(\.caughtUp)))
                  kill -9 of a peer → survivor's connection closed: \(String(format: "%.3f", killNoticed)) s
                  SIGSTOP of a peer → survivor's connection closed: \(String(format: "%.2f", hangNoticed)) s (reason=\(reason))
                """)
            for arrivals in [warm, cold] {
                #expect(median(arrivals.map(\.identified)) < 5, "\(arrivals)")
                #expect(median(arrivals.map(\.caughtUp)) < 10, "\(arrivals)")
            }
            #expect(killNoticed < 2, "a killed process's sockets are closed by its kernel")
            #expect(reason.contains("peer silent"), "\(closedLine)")
            #expect(hangNoticed > 4 && hangNoticed < 10, "the 6 s dead-peer timeout, counted from the last frame heard")
        }
    }

    /// An NDJSON file of `count` Created events of a feed of its own (docs/events.md), for `peerd import`.
    static func bulk(_ count: Int, in lab: NetLab) throws -> String {
        let replicaID = "bulk-\(UUID().uuidString.lowercased())"
        var text = ""
        for seq in 1...count {
            text +=
                #"{"replica_event_id":"\#(UUID().uuidString.lowercased())","replica_id":"\#(replicaID)","#
                + #""scope":"default","replica_write_offset":\#(seq),"replica_time_ms":\#(1_700_000_000_000 + seq),"#
                + #""entity_type":"item","entity_id":"\#(UUID().uuidString.lowercased())","#
                + #""payload":{"name":"Bulk item \#(seq)","quantity":\#(seq),"type":"Created"},"#
                + #""server_offset":null,"server_time_ms":null}"# + "\n"
        }
        let path = lab.path("bulk.ndjson")
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// `1.234 s` from `start` to `end`.
    static func text(_ end: Date, since start: Date) -> String {
        String(format: "%.3f s", end.timeIntervalSince(start))
    }

    static func text(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        return String(format: "%.3f s", Double(seconds) + Double(attoseconds) / 1e18)
    }
}
