import Replica
import SyncProtocol

/// A replica's identity as `/status` (its own) and `/peers` (each
/// connected peer's) show it: the identity public key, and the certificate
/// when there is one. Keys are 64 lowercase hex digits.
struct IdentityReport: Codable, Equatable {
    struct CertificateReport: Codable, Equatable {
        var admin_key: String
        var read_scopes: [String]
        var write_scopes: [String]
        var issued_ms: UInt64
        /// Absent when the certificate does not expire.
        var expires_ms: UInt64?
    }

    var public_key: String
    /// Absent for a replica without a certificate (an open cluster).
    var certificate: CertificateReport?

    init(publicKey: [UInt8], certificate: Certificate?) {
        public_key = Hex.string(publicKey)
        self.certificate = certificate.map { certificate in
            CertificateReport(
                admin_key: Hex.string(certificate.adminKey), read_scopes: certificate.readScopes,
                write_scopes: certificate.writeScopes, issued_ms: certificate.issuedMs,
                expires_ms: certificate.expiresMs)
        }
    }

    init(_ identity: PeerIdentity) {
        self.init(publicKey: identity.publicKey, certificate: identity.certificate)
    }

    /// `read team,alice · write alice · expires 2027-06-30T00:00:00Z`, or `no certificate`.
    var text: String {
        guard let certificate else { return "no certificate" }
        let expiry = certificate.expires_ms.map { "expires \(IdentityError.time($0))" } ?? "no expiry"
        return "read \(Self.list(certificate.read_scopes)) · write \(Self.list(certificate.write_scopes)) · \(expiry)"
    }

    /// `team,alice`, or `none` for no scope.
    static func list(_ scopes: [String]) -> String { scopes.isEmpty ? "none" : scopes.joined(separator: ",") }
}
