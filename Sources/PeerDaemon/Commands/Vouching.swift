import Foundation
import Gossip
import Replica
import SyncProtocol

/// `peerd import FILE --vouch`: the certificates by which this replica
/// vouches for unsigned feeds of other origins (docs/identity.md "Vouching
/// for unsigned history"). In a cluster with an admin key the admin signs
/// them (`--admin-key FILE`, that admin's key); in an open cluster this
/// replica signs them with its own identity key.
struct Vouching {
    let replicaID: String
    let identity: (key: SigningKey, certificate: Certificate?)
    /// The admin key that signs the vouches; `nil` in an open cluster.
    let admin: SigningKey?

    /// Checks that `adminKeyFile` fits the cluster: required, and the key
    /// that signed this replica's certificate, in a cluster with an admin
    /// key; refused in an open one.
    init(replicaID: String, identity: (key: SigningKey, certificate: Certificate?), adminKeyFile: String?) throws {
        self.replicaID = replicaID
        self.identity = identity
        guard let certificate = identity.certificate else {
            guard adminKeyFile == nil else {
                throw CommandError(
                    "--admin-key: this replica has no certificate (an open cluster), so it signs a vouch with its "
                        + "own identity key; run without --admin-key")
            }
            admin = nil
            return
        }
        guard let adminKeyFile else {
            throw CommandError(
                "--vouch: this replica's cluster has an admin key (\(Hex.string(certificate.adminKey).prefix(16))…), "
                    + "and only that admin may vouch for unsigned feeds: add --admin-key FILE with its key")
        }
        admin = try adminKey(fromFile: adminKeyFile, signing: certificate)
    }

    /// One vouch per origin, for its feeds of `vouched` (origin: scopes).
    func certificates(for vouched: [String: [String]], nowMs: UInt64) -> [Certificate] {
        vouched.keys.sorted().map { origin in
            Certificate.adoption(
                by: admin ?? identity.key, voucher: identity.key.publicKey, voucherID: replicaID, origin: origin,
                scopes: vouched[origin]!, issuedMs: nowMs)
        }
    }

    /// What the import prints for each vouch.
    static func summary(_ certificate: Certificate) -> String {
        let signer =
            certificate.isSelfSigned
            ? "self-signed by this replica (an open cluster)"
            : "signed by admin key \(Hex.string(certificate.adminKey).prefix(16))…"
        return "vouched for the unsigned feeds of \(certificate.replicaID) "
            + "(scopes \(certificate.writeScopes.joined(separator: ","))): \(signer)"
    }
}

/// `--admin-key FILE` of a replica with a certificate: the admin key in
/// FILE, which must be the one that signed `certificate`.
func adminKey(fromFile path: String, signing certificate: Certificate) throws -> SigningKey {
    let key: SigningKey
    do {
        key = try SigningKey.read(fromFile: path)
    } catch let error as KeyFileError {
        throw CommandError("--admin-key: \(error)")
    }
    guard key.publicKey == certificate.adminKey else {
        throw CommandError(
            "--admin-key: \(path) holds admin key \(Hex.string(key.publicKey).prefix(16))…, but this "
                + "replica's certificate is signed by admin key \(Hex.string(certificate.adminKey).prefix(16))…")
    }
    return key
}
