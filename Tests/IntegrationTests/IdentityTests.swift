import DaemonClient
import Foundation
import SyncProtocol
import TestSupport
import Testing

/// Identities and certificates with real daemons: `peerd admin-key`,
/// `identity`, `invite`, `init --join INVITE`, and what `/status` and
/// `/peers` show (docs/identity.md).
@Suite("identities and certificates")
struct IdentityTests {
    let temp: TemporaryDirectory
    init() throws { temp = try TemporaryDirectory() }

    /// An admin key, replica `a` certified by it, and `others` joined with
    /// the cluster code (no certificate yet).
    func certifiedCluster(_ others: [String]) throws {
        try temp.peerdOK(["admin-key", "--out", temp.path("admin.key")], "a")
        try temp.cluster("a", others)
        try certify("a", read: "team,alice", write: "alice", expires: "30d")
    }

    /// `peerd invite` for `dir`'s identity, run on `via`, then `init --join` on `dir`.
    @discardableResult
    func certify(_ dir: String, read: String, write: String, expires: String? = nil, via: String = "a") throws
        -> String
    {
        let identity = try temp.peerdOK(["identity"], dir)
        let invite = try temp.peerdOK(
            ["invite", "--admin-key", temp.path("admin.key"), "--for", identity, "--read", read, "--write", write]
                + (expires.map { ["--expires", $0] } ?? []), via)
        return try temp.peerdOK(["init", "--join", invite], dir)
    }

    func json(_ daemon: Daemon, _ path: String) throws -> [String: Any] {
        try jsonObject(try daemon.api!.request("GET", path).text)
    }

    /// The `/peers` row of the connected peer `replicaID`.
    func row(of replicaID: String, in daemon: Daemon) throws -> [String: Any]? {
        let peers = try json(daemon, "/peers")["peers"] as? [[String: Any]] ?? []
        return peers.first { $0["replica_id"] as? String == replicaID && $0["state"] as? String == "connected" }
    }

    @Test("init makes identity.key (0600); an invite joins with scopes that /status and /peers show")
    func certifiedReplicasSyncAndShowTheirScopes() throws {
        try certifiedCluster(["b"])
        let attributes = try FileManager.default.attributesOfItem(atPath: temp.path("b/identity.key"))
        #expect(attributes[.posixPermissions] as? Int == 0o600 && attributes[.size] as? Int == 32)
        let joined = try certify("b", read: "team,bob", write: "bob,team")
        #expect(joined.contains("read bob,team · write bob,team · no expiry"), "\(joined)")

        let a = try Daemon.start(data: temp.url("a"))
        let b = try Daemon.start(data: temp.url("b"), peers: [a.address])
        #expect(try create("bolts", scope: "team", on: b).status == 201)
        _ = try Convergence.wait([temp.url("a"), temp.url("b")])

        let bID = try ReplicaStatus.of(temp.url("b")).replica_id
        let bStatus = try json(b, "/status")["identity"] as? [String: Any]
        let bKey = try #require(bStatus?["public_key"] as? String)
        #expect(bKey.count == 64)
        let row = try #require(try row(of: bID, in: a))
        let identity = try #require(row["identity"] as? [String: Any])
        #expect(identity["public_key"] as? String == bKey)
        let certificate = try #require(identity["certificate"] as? [String: Any])
        #expect(certificate["read_scopes"] as? [String] == ["bob", "team"])
        #expect(certificate["write_scopes"] as? [String] == ["bob", "team"])
        #expect(certificate["expires_ms"] == nil)
        let aCertificate = try #require(
            (try json(a, "/status")["identity"] as? [String: Any])?["certificate"] as? [String: Any])
        #expect(aCertificate["read_scopes"] as? [String] == ["alice", "team"])
        #expect(aCertificate["admin_key"] as? String == certificate["admin_key"] as? String)
        let expires = try #require(aCertificate["expires_ms"] as? Int64)
        #expect(abs(expires - Int64(Date().timeIntervalSince1970 * 1000) - 30 * 86_400_000) < 600_000)

        let listed = try json(a, "/status")["peer_identities"] as? [[String: Any]] ?? []
        let fromStatus = try #require(listed.first { $0["replica_id"] as? String == bID })
        let statusIdentity = fromStatus["identity"] as? [String: Any]
        #expect(statusIdentity?["public_key"] as? String == bKey)
        #expect((statusIdentity?["certificate"] as? [String: Any])?["read_scopes"] as? [String] == ["bob", "team"])
        let table = try Executables.peerd(["peers"], data: temp.url("a"))
        #expect(table.stdout.contains("KEY") && table.stdout.contains(String(bKey.prefix(12))))
        #expect(table.stdout.contains("bob,team"), "\(table.stdout)")
    }

    @Test("a replica without a certificate is refused, learns nothing, and its peer row says why")
    func anUncertifiedReplicaIsRefused() throws {
        try certifiedCluster(["c"])
        let a = try Daemon.start(data: temp.url("a"))
        #expect(try create("secret plans", scope: "alice", on: a).status == 201)
        let c = try Daemon.start(data: temp.url("c"), peers: [a.address])
        let cID = try ReplicaStatus.of(temp.url("c")).replica_id
        let reason = "refused: replica \(cID) shows no certificate, and this cluster requires one"
        // The reason is the refusal /peers shows as last_error (docs/identity.md).
        #expect(
            c.waitForEvent(.connectionClosed) { $0["reason"]?.hasPrefix("peer said goodbye: \(reason)") == true },
            "\(c.stderr)")
        #expect(a.waitForEvent(.connectionClosed) { $0["reason"]?.hasPrefix(reason) == true }, "\(a.stderr)")
        let peers = try json(c, "/peers")["peers"] as? [[String: Any]] ?? []
        let error = peers.first?["last_error"] as? String ?? ""
        #expect(error.contains(reason), "\(peers)")
        #expect(try Peek.eventCount(temp.url("c")) == 0)
        // It never learned the cursor: no event, and no missing count either.
        #expect(peers.first?["events_to_receive"] as? Int == 0)
    }

    @Test("an expired certificate is refused with a message that says when and what to do")
    func anExpiredCertificateIsRefused() throws {
        try certifiedCluster(["b"])
        try certify("b", read: "team", write: "bob", expires: "1h")
        // a's clock runs two hours ahead: to a, b's certificate expired an hour ago.
        let a = try Daemon.start(data: temp.url("a"), extra: ["--clock-offset-ms", "7200000"])
        let b = try Daemon.start(data: temp.url("b"), peers: [a.address])
        let bID = try ReplicaStatus.of(temp.url("b")).replica_id
        #expect(
            b.waitForEvent(.connectionClosed) {
                $0["reason"]?.hasPrefix("peer said goodbye: refused: the certificate of replica \(bID) expired at")
                    == true
            }, "\(b.stderr)")
        let peers = try json(b, "/peers")["peers"] as? [[String: Any]] ?? []
        let error = peers.first?["last_error"] as? String ?? ""
        #expect(error.contains("expired at"), "\(peers)")
        #expect(error.contains("ask an admin for a new one (`peerd invite`)"), "\(peers)")
        #expect(try row(of: bID, in: a) == nil)
    }

    @Test("invites are checked before anything is written")
    func badInvitesChangeNothing() throws {
        try certifiedCluster(["b", "c"])
        let bIdentity = try temp.peerdOK(["identity"], "b")
        #expect(bIdentity.hasPrefix("psid1-"))
        let invite = try temp.peerdOK(
            ["invite", "--admin-key", temp.path("admin.key"), "--for", bIdentity, "--read", "team", "--write", ""], "a")
        #expect(invite.hasPrefix("psi1-"))
        // An invite made for b does not fit c, nor a directory without a replica.
        let wrong = try Executables.peerd(["init", "--join", invite], data: temp.url("c"))
        #expect(wrong.status == 1 && wrong.stderr.contains("the certificate is for replica"), "\(wrong.stderr)")
        #expect(!FileManager.default.fileExists(atPath: temp.path("c/certificate")))
        let none = try Executables.peerd(["init", "--join", invite], data: temp.url("empty"))
        #expect(none.status == 1 && none.stderr.contains("an invite is for one replica"), "\(none.stderr)")
        #expect(!FileManager.default.fileExists(atPath: temp.path("empty/replica.db")))
        let typo = try Executables.peerd(["init", "--join", String(invite.dropLast()) + "0"], data: temp.url("b"))
        #expect(typo.status == 1 && typo.stderr.contains("not a PeerSync invite code"), "\(typo.stderr)")
        #expect(!FileManager.default.fileExists(atPath: temp.path("b/certificate")))
        // Usage errors: exit 2.
        for arguments in [
            ["invite", "--admin-key", temp.path("admin.key"), "--for", "garbage", "--read", "", "--write", ""],
            ["invite", "--admin-key", temp.path("admin.key"), "--for", bIdentity, "--read", "a,,b", "--write", ""],
            [
                "invite", "--admin-key", temp.path("admin.key"), "--for", bIdentity, "--read", "", "--write", "",
                "--expires", "2020-01-01T00:00:00Z",
            ],
            ["invite", "--for", bIdentity, "--read", "", "--write", ""],
            [
                "invite", "--admin-key", temp.path("admin.key"), "--for", bIdentity, "--read", "", "--write", "",
                "--expires", "99999999999999999d",
            ],
        ] {
            let result = try Executables.peerd(arguments, data: temp.url("a"))
            #expect(result.status == 2, "\(arguments): \(result.stderr)")
        }
        let again = try Executables.peerd(["admin-key", "--out", temp.path("admin.key")], data: temp.url("a"))
        #expect(again.status == 1 && again.stderr.contains("refusing to overwrite"), "\(again.stderr)")
    }

    /// `POST /items` in `scope`; the reply's status and body.
    func create(_ name: String, scope: String, on daemon: Daemon) throws -> (status: Int, text: String) {
        let reply = try daemon.api!.request(
            "POST", "/items", body: #"{"name":"\#(name)","quantity":1,"scope":"\#(scope)"}"#)
        return (reply.status, reply.text)
    }

    /// An admin key and three certified replicas: `hub` (read `*`, write
    /// `hubWrites`), alice (read `team,alice`, write `alice`) and bob (read
    /// `team,bob`, write `bob`).
    func aliceAndBob(around hub: String, writing hubWrites: String) throws {
        try temp.peerdOK(["admin-key", "--out", temp.path("admin.key")], hub)
        try temp.cluster(hub, ["alice", "bob"])
        try certify(hub, read: "*", write: hubWrites, via: hub)
        try certify("alice", read: "team,alice", write: "alice", via: hub)
        try certify("bob", read: "team,bob", write: "bob", via: hub)
    }

    /// The scopes of the feeds `dir` holds.
    func scopes(_ dir: String) throws -> Set<String> {
        Set(try Peek.cursor(temp.url(dir)).feeds.map(\.scope))
    }

    @Test("alice sees team and alice, bob sees team and bob, and neither the other's, directly or through a hub")
    func eachReplicaSeesOnlyItsScopes() throws {
        try aliceAndBob(around: "hub", writing: "team")
        let hub = try Daemon.start(data: temp.url("hub"))
        let alice = try Daemon.start(data: temp.url("alice"), peers: [hub.address])
        let bob = try Daemon.start(data: temp.url("bob"), peers: [hub.address, alice.address])

        #expect(try create("plan", scope: "team", on: hub).status == 201)
        #expect(try create("alice's list", scope: "alice", on: alice).status == 201)
        #expect(try create("bob's list", scope: "bob", on: bob).status == 201)
        let refused = try create("bob's, by alice", scope: "bob", on: alice)
        #expect(refused.status == 403 && refused.text.contains("scope_not_writable"), "\(refused.text)")
        // Without a scope it is `default`, which alice may not write either; the CLI says the same.
        let unscoped = try alice.api!.request("POST", "/items", body: #"{"name":"x","quantity":1}"#)
        #expect(unscoped.status == 403, "\(unscoped.text)")
        let cli = try Executables.peerd(["item", "create", "x", "1"], data: temp.url("alice"))
        #expect(cli.status == 1 && cli.stderr.contains("does not let it write scope default"), "\(cli.stderr)")

        let arrived = try Poll.until(timeout: .seconds(30), every: .milliseconds(20)) {
            try scopes("hub") == ["team", "alice", "bob"] && scopes("alice") == ["team", "alice"]
                && scopes("bob") == ["team", "bob"]
        }
        let seen = "hub \(try scopes("hub")), alice \(try scopes("alice")), bob \(try scopes("bob"))"
        #expect(arrived, "\(seen)")
        // A later team item reaches both; what each may not read still has not.
        #expect(try create("later", scope: "team", on: hub).status == 201)
        let later = try Poll.until(timeout: .seconds(30), every: .milliseconds(20)) {
            try [temp.url("alice"), temp.url("bob")].allSatisfy { try Peek.eventCount($0) == 3 }
        }
        #expect(later)
        #expect(try scopes("alice") == ["team", "alice"] && scopes("bob") == ["team", "bob"])
        let aliceItems = try alice.api!.request("GET", "/items").text
        #expect(aliceItems.contains("alice's list") && !aliceItems.contains("bob's list"))
        // alice and bob are connected, and each is told only of the feeds it may read.
        let bobID = try ReplicaStatus.of(temp.url("bob")).replica_id
        #expect(try row(of: bobID, in: alice) != nil)
        // Holding what each may see is being in sync: `peerd wait` returns for both and the hub.
        for dir in ["alice", "bob", "hub"] {
            let wait = try Executables.peerd(["wait", "--converged-with", "2", "--timeout", "30"], data: temp.url(dir))
            let peers =
                wait.status == 0 ? "" : (try? Executables.peerd(["peers", "--json"], data: temp.url(dir)).stdout) ?? ""
            #expect(wait.status == 0, "\(dir): \(wait.stdout) \(wait.stderr) \(peers)")
        }
    }

    @Test("a revocation spreads, ends the revoked replica's connections everywhere, survives a restart")
    func aRevocationSpreadsAndHolds() throws {
        try temp.peerdOK(["admin-key", "--out", temp.path("admin.key")], "hub")
        try temp.cluster("hub", ["b", "c"])
        for dir in ["hub", "b", "c"] { try certify(dir, read: "*", write: "*", via: "hub") }
        let hub = try Daemon.start(data: temp.url("hub"))
        var b = try Daemon.start(data: temp.url("b"), peers: [hub.address])
        let c = try Daemon.start(data: temp.url("c"), peers: [hub.address, b.address])
        #expect(try create("before", scope: "team", on: c).status == 201)
        _ = try Convergence.wait([temp.url("hub"), temp.url("b"), temp.url("c")])
        let cID = try ReplicaStatus.of(temp.url("c")).replica_id

        // Installed on the hub only; b learns it from the hub.
        let code = try temp.peerdOK(
            ["revoke", "--admin-key", temp.path("admin.key"), "--replica", cID], "hub")
        #expect(code.hasPrefix("psr1-"))
        let again = try temp.peerdOK(["revoke", "--admin-key", temp.path("admin.key"), "--replica", cID], "hub")
        #expect(again.hasPrefix("replica \(cID) was already revoked at "), "\(again)")
        func revoked(_ daemon: Daemon) throws -> [String] {
            let list = try json(daemon, "/status")["revoked"] as? [[String: Any]] ?? []
            return list.compactMap { $0["replica_id"] as? String }
        }
        #expect(try Poll.until(timeout: .seconds(30), every: .milliseconds(20)) { try revoked(b) == [cID] })
        let reason = "refused: replica \(cID) was revoked by the cluster's admin at"
        #expect(
            c.waitForEvent(.connectionClosed) { $0["reason"]?.hasPrefix("peer said goodbye: \(reason)") == true },
            "\(c.stderr)")
        // c was told why: it holds its own revocation, and its status lists it.
        #expect(c.waitForEvent(.thisReplicaRevoked, ["replica": cID]), "\(c.stderr)")
        #expect(try Poll.until(timeout: .seconds(10), every: .milliseconds(20)) { try revoked(c) == [cID] })
        let gone = try Poll.until(timeout: .seconds(30), every: .milliseconds(20)) {
            try row(of: cID, in: hub) == nil && row(of: cID, in: b) == nil
        }
        #expect(gone)
        // What was stored before stays; c's later events reach nobody.
        #expect(try create("after", scope: "team", on: c).status == 201)
        #expect(try Peek.eventCount(temp.url("b")) == 1 && Peek.eventCount(temp.url("hub")) == 1)
        // b stored it: after a restart it still refuses c.
        _ = try b.stop()
        #expect(try String(contentsOf: temp.url("b/revocations"), encoding: .utf8) == code + "\n")
        b = try Daemon.start(data: temp.url("b"))
        #expect(try revoked(b) == [cID])
        let metrics = try b.api!.request("GET", "/metrics").text
        #expect(metrics.contains("peersync_events_rejected_total{reason=\"revoked\"}"))
    }

    @Test("through a relay and a thin client too: alice's phone and alice see team and alice, bob sees neither")
    func scopesHoldThroughARelayAndAThinClient() throws {
        try aliceAndBob(around: "relay", writing: "*")
        let token = try temp.peerdOK(
            ["thin-client", "add", "alice-phone", "--read", "team,alice", "--write", "alice"], "relay")
        let relay = try Daemon.start(data: temp.url("relay"), extra: ["--relay"])
        let alice = try Daemon.start(data: temp.url("alice"), peers: [relay.address])
        let bob = try Daemon.start(data: temp.url("bob"), peers: [relay.address])

        #expect(try create("plan", scope: "team", on: relay).status == 201)
        #expect(try create("bob's list", scope: "bob", on: bob).status == 201)
        // The phone writes in alice through the relay.
        let phone = SeedClient(replicaID: "alice-phone", port: try #require(relay.api).port, token: token)
        let push = try phone.request(
            "POST", "/events",
            body: """
                [{"replica_event_id":"\(UUID().uuidString.lowercased())","entity_id":"\(UUID().uuidString.lowercased())",\
                "payload":{"type":"Created","name":"from the phone","quantity":1},"replica_id":"alice-phone",\
                "scope":"alice","replica_time_ms":1796000000000}]
                """)
        #expect(push.status == 200, "\(push.body)")
        let arrived = try Poll.until(timeout: .seconds(30), every: .milliseconds(20)) {
            try scopes("relay") == ["team", "alice", "bob"] && scopes("alice") == ["team", "alice"]
                && scopes("bob") == ["team", "bob"]
        }
        let seen = "relay \(try scopes("relay")), alice \(try scopes("alice")), bob \(try scopes("bob"))"
        #expect(arrived, "\(seen)")
        #expect(try alice.api!.request("GET", "/items").text.contains("from the phone"))
        #expect(!(try bob.api!.request("GET", "/items").text.contains("from the phone")))
        // The phone's pull: team and alice, never bob's.
        let page = try phone.request("GET", "/events")
        #expect(page.status == 200 && page.body.contains("plan") && page.body.contains("from the phone"))
        #expect(!page.body.contains("bob's list"), "\(page.body)")
    }

    @Test("a replica restored from an old copy that writes again is proven forked: both quarantine its feed")
    func aRestoredReplicaThatWritesAgainIsAFork() throws {
        try temp.cluster("a", ["b", "c"])
        var b = try Daemon.start(data: temp.url("b"))
        let a = try Daemon.start(data: temp.url("a"), peers: [b.address])
        // c is given only a: it learns of b's second history from a proof, or by meeting b through peer exchange.
        let c = try Daemon.start(data: temp.url("c"), peers: [a.address])
        try b.createItem("first")
        _ = try Convergence.wait([temp.url("a"), temp.url("b")])
        // The backup: b's directory as it is now (stopped, so the copy is whole).
        _ = try b.stop()
        try FileManager.default.copyItem(at: temp.url("b"), to: temp.url("b-backup"))
        b = try Daemon.start(data: temp.url("b"), peers: [a.address])
        try b.createItem("lost with the disk")
        _ = try Convergence.wait([temp.url("a"), temp.url("b")])
        _ = try b.stop()
        // The disk dies; b comes back from the backup and writes again before it meets a: the same
        // seq, another event. (Had it met a first, a would have given it back what it lost.)
        try FileManager.default.removeItem(at: temp.url("b"))
        try FileManager.default.moveItem(at: temp.url("b-backup"), to: temp.url("b"))
        try temp.peerdOK(["item", "create", "written after the restore", "1"], "b")
        b = try Daemon.start(data: temp.url("b"), peers: [a.address])
        let bID = try ReplicaStatus.of(temp.url("b")).replica_id
        let reported = try Poll.until(timeout: .seconds(30), every: .milliseconds(50)) {
            try row(of: bID, in: a)?["diverged"] as? Bool == true
        }
        let lastRow = String(describing: try row(of: bID, in: a))
        #expect(reported, "\(lastRow)")
        // Whichever replica's round notices first shows the other its signed heads: a or b, or c
        // once peer exchange has made it meet b too (c holds the history b lost).
        let noticed = Poll.until(timeout: .seconds(60), every: .milliseconds(50)) {
            [a, b, c].contains { !$0.events(.stateDiverged).isEmpty }
        }
        #expect(noticed)
        // Their signed heads at seq 2 differ: each proves the fork and quarantines b's feed.
        func forked(_ daemon: Daemon) throws -> [String] {
            let feeds = try json(daemon, "/status")["forked_feeds"] as? [[String: Any]] ?? []
            return feeds.map { "\($0["replica_id"] ?? "")/\($0["scope"] ?? "") at \($0["seq"] ?? "")" }
        }
        let proven = try Poll.until(timeout: .seconds(30), every: .milliseconds(50)) {
            try forked(a) == ["\(bID)/default at 2"] && forked(b) == ["\(bID)/default at 2"]
        }
        let seen = "a: \(try forked(a)), b: \(try forked(b))"
        #expect(proven, "\(seen)")
        let spread = try Poll.until(timeout: .seconds(30), every: .milliseconds(50)) {
            try forked(c) == ["\(bID)/default at 2"]
        }
        let atC = try forked(c)
        #expect(spread, "c: \(atC)")
        #expect(c.waitForEvent(.feedQuarantined, ["feed": "\(bID)/default"]))
        #expect(a.waitForEvent(.feedQuarantined, ["feed": "\(bID)/default"]))
        #expect(try a.metric("peersync_forked_feeds") == 1)
        #expect(try row(of: bID, in: a)?["in_sync"] as? Bool == false)
        let status = try json(a, "/status")
        #expect((status["forks"] as? Int ?? 0) >= 1)
        let cursor = status["cursor"] as? [[String: Any]] ?? []
        #expect(!cursor.contains { $0["replica_id"] as? String == bID }, "\(cursor)")
        // b may no longer write its forked feed; a loud refusal, not a silent divergence.
        let refused = try b.api!.request("POST", "/items", body: #"{"name":"again","quantity":1}"#)
        #expect(refused.status == 409 && refused.text.contains("feed_forked"), "\(refused.text)")
        #expect(try temp.peerdOK(["status"], "b").contains("forked      \(bID)/default at seq 2"))
    }
}
