import Foundation
import Gossip
import Replica
import SyncProtocol

/// `peerd init`: creates the data directory, a new replica and the cluster
/// key, or joins an existing cluster with its share code.
enum InitCommand {
    static let command = Command(
        path: ["init"], usage: "init [--join CODE]",
        summary: """
            Creates the data directory with a new replica id and database, identity.key (mode 0600: the \
            replica's signing key) and cluster.key (mode 0600): a new cluster's secret, or with --join CODE the \
            secret of the cluster whose `peerd cluster-code` printed CODE (--join - reads it from standard input). \
            Refuses to overwrite a replica or a key. With an invite code from `peerd invite` (psi1-…), --join \
            works on an existing replica: it installs the invite's certificate and cluster key.
            """,
        options: ["join"]
    ) { arguments, directory in
        _ = try arguments.positional()
        let code = try arguments.options["join"].map(joinCode)
        if let code, Invite.looksLikeInvite(code) { return try accept(code, into: directory) }
        // Check the code before anything is created, so a typo leaves no trace.
        let key: ClusterKey
        do {
            key = try code.map { try ClusterKey(code: $0) } ?? .generate()
        } catch SecurityError.notAClusterCode(let detail) {
            throw CommandError(
                "--join: not a PeerSync cluster code: \(detail) (or \"\(Invite.prefix)\" for an invite from `peerd invite`)"
            )
        } catch {
            throw CommandError("--join: \(error)")
        }
        let log = try directory.initialize(clusterKey: key)
        print("initialized replica \(log.replicaID) in \(directory.path)")
        if code == nil {
            print("created cluster \(key.fingerprint); `peerd cluster-code` prints the code other devices join with")
        } else {
            print("joined cluster \(key.fingerprint)")
        }
    }

    /// `--join INVITE`: the certificate and cluster key, into an existing replica.
    private static func accept(_ code: String, into directory: DataDirectory) throws {
        let invite: Invite
        do {
            invite = try Invite(code: code)
        } catch {
            throw CommandError("--join: \(error)")
        }
        guard FileManager.default.fileExists(atPath: directory.databasePath) else {
            throw CommandError(
                "--join: an invite is for one replica (\(invite.certificate.replicaID)), and \(directory.path) holds "
                    + "none; run `peerd init --data \(directory.path)`, give the admin its `peerd identity`, and join "
                    + "with the invite made for it")
        }
        let replicaID = try directory.openLog().replicaID
        try directory.join(invite, replicaID: replicaID, nowMs: TrustPolicy.systemClockMs())
        let report = IdentityReport(publicKey: invite.certificate.publicKey, certificate: invite.certificate)
        print(
            "joined cluster \(invite.clusterKey.fingerprint) as replica \(replicaID): \(report.text); "
                + "restart a running peerd to use it")
    }

    /// The code itself, or the first line of standard input for `-`.
    private static func joinCode(_ option: String) throws -> String {
        guard option == "-" else { return option }
        guard let line = readLine(), !line.isEmpty else {
            throw CommandError("--join -: no cluster code on standard input")
        }
        return line
    }
}
