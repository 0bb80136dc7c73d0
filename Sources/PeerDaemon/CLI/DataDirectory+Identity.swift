import Foundation
import Gossip
import Replica
import SyncProtocol

/// The replica's identity files: `identity.key` (the Ed25519 seed, mode
/// 0600) and, once it joined with an invite, `certificate` (docs/identity.md).
extension DataDirectory {
    var identityKeyPath: String { (path as NSString).appendingPathComponent("identity.key") }
    var certificatePath: String { (path as NSString).appendingPathComponent("certificate") }

    /// The identity key; a data directory made before identities gets one now.
    func identityKey() throws -> SigningKey {
        try SigningKey.readOrCreate(atPath: identityKeyPath)
    }

    /// The certificate installed by `peerd init --join INVITE`, if any.
    func certificate() throws -> Certificate? {
        guard let data = FileManager.default.contents(atPath: certificatePath) else {
            guard FileManager.default.fileExists(atPath: certificatePath) else { return nil }
            throw CommandError("cannot read \(certificatePath)")
        }
        do {
            return try Certificate(bytes: Array(data))
        } catch {
            throw CommandError(
                "\(certificatePath): \(error); ask an admin for a new invite and run "
                    + "`peerd init --data \(path) --join CODE`")
        }
    }

    /// This replica's identity as the sync layer wants it.
    func identity(replicaID: String) throws -> (key: SigningKey, certificate: Certificate?) {
        let key = try identityKey()
        let certificate = try certificate()
        if let certificate, certificate.replicaID != replicaID || certificate.publicKey != key.publicKey {
            let whose =
                certificate.replicaID == replicaID
                ? "another identity key than \(identityKeyPath) holds"
                : "replica \(certificate.replicaID), not this replica (\(replicaID))"
            throw CommandError(
                "\(certificatePath) is for \(whose); remove it and join again with an invite for `peerd identity`")
        }
        return (key, certificate)
    }

    /// Installs an invite into this replica: checks that its certificate is
    /// for this replica and key and is valid now, then writes the cluster key
    /// and the certificate. The replica's events stay.
    func join(_ invite: Invite, replicaID: String, nowMs: UInt64) throws {
        let key = try identityKey()
        do {
            try invite.certificate.check(replicaID: replicaID, publicKey: key.publicKey, nowMs: nowMs)
        } catch let error as IdentityError {
            throw CommandError("--join: \(error)")
        }
        try replaceFile(named: "certificate", with: invite.certificate.bytes)
        if (try? readClusterKey()) != invite.clusterKey {
            // A new key file, renamed over the old one in one step.
            let fresh = clusterKeyPath + ".new"
            unlink(fresh)
            try invite.clusterKey.write(toFile: fresh)
            guard rename(fresh, clusterKeyPath) == 0 else {
                let code = errno
                unlink(fresh)
                throw CommandError.cannotWrite(clusterKeyPath, errno: code)
            }
        }
    }
}

/// `DIR/revocations`: the revocations this replica knows, one code
/// (`psr1-…`) a line, from `peerd revoke` and from peers.
extension DataDirectory {
    var retiredPath: String { (path as NSString).appendingPathComponent("retired") }

    /// The replicas retired in an open cluster (`peerd retire`), one id a line.
    func retired() throws -> Set<String> {
        guard let data = FileManager.default.contents(atPath: retiredPath) else { return [] }
        return Set(String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init).filter { !$0.isEmpty })
    }

    /// Adds `replicaID` to the retired replicas.
    func retire(_ replicaID: String) throws {
        var all = try retired()
        all.insert(replicaID)
        try replaceFile(named: "retired", with: Array(all.sorted().map { $0 + "\n" }.joined().utf8))
    }

    var revocationsPath: String { (path as NSString).appendingPathComponent("revocations") }

    func revocations() throws -> [Revocation] {
        guard let data = FileManager.default.contents(atPath: revocationsPath) else { return [] }
        return try String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline).enumerated().map {
            number, line in
            do {
                return try Revocation(code: String(line))
            } catch {
                throw CommandError("\(revocationsPath):\(number + 1): \(error); fix or remove the line")
            }
        }
    }

    /// Adds the revocations not in the file yet (written whole, then renamed).
    func store(_ revocations: [Revocation]) throws {
        var all = try self.revocations()
        for revocation in revocations where !all.contains(revocation) { all.append(revocation) }
        try replaceFile(named: "revocations", with: Array(all.map { $0.code + "\n" }.joined().utf8))
    }

    /// The certificates an export carries: this replica's own (the admin's,
    /// or in an open cluster one it signs itself) and those it keeps.
    func exportCertificates(_ log: EventLog) throws -> [Certificate] {
        let mine = try identity(replicaID: log.replicaID)
        let own = mine.certificate ?? Certificate.selfSigned(by: mine.key, replicaID: log.replicaID)
        let kept = try log.certificates().compactMap { try? Certificate(bytes: $0) }
        return [own] + kept.filter { $0 != own }
    }
}

extension TrustPolicy {
    /// The system's wall clock in Unix ms, for certificate times.
    static func systemClockMs() -> UInt64 { UInt64(WallClock.system.nowMs()) }

}
