import DaemonClient
import Foundation
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

    /// `peerd invite` for `dir`'s identity, run on `a`, then `init --join` on `dir`.
    @discardableResult
    func certify(_ dir: String, read: String, write: String, expires: String? = nil) throws -> String {
        let identity = try temp.peerdOK(["identity"], dir)
        let invite = try temp.peerdOK(
            ["invite", "--admin-key", temp.path("admin.key"), "--for", identity, "--read", read, "--write", write]
                + (expires.map { ["--expires", $0] } ?? []), "a")
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
        let joined = try certify("b", read: "team,bob", write: "bob")
        #expect(joined.contains("read bob,team · write bob · no expiry"), "\(joined)")

        let a = try Daemon.start(data: temp.url("a"))
        let b = try Daemon.start(data: temp.url("b"), peers: [a.address])
        try b.createItem("bolts")
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
        #expect(certificate["write_scopes"] as? [String] == ["bob"])
        #expect(certificate["expires_ms"] == nil)
        let aCertificate = try #require(
            (try json(a, "/status")["identity"] as? [String: Any])?["certificate"] as? [String: Any])
        #expect(aCertificate["read_scopes"] as? [String] == ["alice", "team"])
        #expect(aCertificate["admin_key"] as? String == certificate["admin_key"] as? String)
        let expires = try #require(aCertificate["expires_ms"] as? Int64)
        #expect(abs(expires - Int64(Date().timeIntervalSince1970 * 1000) - 30 * 86_400_000) < 600_000)

        let table = try Executables.peerd(["peers"], data: temp.url("a"))
        #expect(table.stdout.contains("KEY") && table.stdout.contains(String(bKey.prefix(12))))
        #expect(table.stdout.contains("bob,team"), "\(table.stdout)")
    }

    @Test("a replica without a certificate is refused, learns nothing, and its peer row says why")
    func anUncertifiedReplicaIsRefused() throws {
        try certifiedCluster(["c"])
        let a = try Daemon.start(data: temp.url("a"))
        try a.createItem("secret plans")
        let c = try Daemon.start(data: temp.url("c"), peers: [a.address])
        let cID = try ReplicaStatus.of(temp.url("c")).replica_id
        let reason = "refused: replica \(cID) shows no certificate, and this cluster requires one"
        #expect(c.waitForLog("peer said goodbye", reason))
        #expect(a.waitForLog("connection closed", reason))
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
        #expect(b.waitForLog("peer said goodbye", "refused: the certificate of replica \(bID) expired at"))
        #expect(b.logLines(containing: "ask an admin for a new one (`peerd invite`)").count > 0)
        let peers = try json(b, "/peers")["peers"] as? [[String: Any]] ?? []
        let error = peers.first?["last_error"] as? String ?? ""
        #expect(error.contains("expired at"), "\(peers)")
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
        ] {
            let result = try Executables.peerd(arguments, data: temp.url("a"))
            #expect(result.status == 2, "\(arguments): \(result.stderr)")
        }
        let again = try Executables.peerd(["admin-key", "--out", temp.path("admin.key")], data: temp.url("a"))
        #expect(again.status == 1 && again.stderr.contains("refusing to overwrite"), "\(again.stderr)")
    }
}
