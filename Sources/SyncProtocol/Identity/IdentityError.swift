import Foundation
import Replica

/// Why a certificate, an identity or an invite is refused. Each message says
/// what is wrong and, where a person can fix it, how.
public enum IdentityError: Error, Equatable, Sendable, CustomStringConvertible {
    case malformedCertificate(String)
    /// The admin key named in the certificate did not sign it.
    case badCertificateSignature(replicaID: String)
    /// The certificate names another replica id or another public key.
    case certificateForAnotherReplica(certified: String, presented: String, keyMatches: Bool)
    case certificateExpired(replicaID: String, expiresMs: UInt64)
    /// A certificate signed by an admin key this cluster does not trust.
    case untrustedAdmin(replicaID: String, adminKey: [UInt8])
    /// A peer showed no certificate to a replica that requires one.
    case noCertificate(replicaID: String)
    /// A peer's signature over this connection does not verify with the key it showed.
    case badProof(replicaID: String)
    case malformedRevocation(String)
    /// The admin key named in the revocation did not sign it.
    case badRevocationSignature(replicaID: String)
    /// The admin revoked the replica.
    case revoked(replicaID: String, revokedMs: UInt64)
    /// Text that is not an identity or invite code.
    case notACode(kind: String, detail: String)
    /// A hello showed a vouch for unsigned history, which certifies feeds, not a replica.
    case adoptionShownAsIdentity(replicaID: String, voucher: String)

    public var description: String {
        switch self {
        case .malformedCertificate(let detail):
            return "not a PeerSync certificate: \(detail)"
        case .badCertificateSignature(let replicaID):
            return "the certificate of replica \(replicaID) is not signed by the admin key it names: it was altered"
        case .certificateForAnotherReplica(let certified, let presented, let keyMatches):
            let what = certified == presented && !keyMatches ? "another identity key" : "replica \(certified)"
            return "the certificate is for \(what), not for replica \(presented) and its key"
        case .certificateExpired(let replicaID, let expiresMs):
            return "the certificate of replica \(replicaID) expired at \(IdentityError.time(expiresMs)); "
                + "ask an admin for a new one (`peerd invite`) and run `peerd init --join CODE` on that replica"
        case .untrustedAdmin(let replicaID, let adminKey):
            return "the certificate of replica \(replicaID) is signed by admin key \(Hex.string(adminKey)), "
                + "which this cluster does not trust"
        case .noCertificate(let replicaID):
            return "replica \(replicaID) shows no certificate, and this cluster requires one; "
                + "an admin issues it with `peerd invite`"
        case .badProof(let replicaID):
            return "replica \(replicaID) does not hold the identity key it showed"
        case .malformedRevocation(let detail):
            return "not a PeerSync revocation: \(detail)"
        case .badRevocationSignature(let replicaID):
            return "the revocation of replica \(replicaID) is not signed by the admin key it names: it was altered"
        case .revoked(let replicaID, let revokedMs):
            return "replica \(replicaID) was revoked by the cluster's admin at \(IdentityError.time(revokedMs))"
        case .notACode(let kind, let detail):
            return "not a PeerSync \(kind): \(detail)"
        case .adoptionShownAsIdentity(let replicaID, let voucher):
            return "replica \(replicaID) shows a vouch for its unsigned history (by \(voucher)), which certifies "
                + "feeds, not a replica; it needs a certificate of its own (`peerd invite`)"
        }
    }

    /// `2026-12-31T00:00:00Z`.
    public static func time(_ ms: UInt64) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: Date(timeIntervalSince1970: Double(ms) / 1000))
    }
}
