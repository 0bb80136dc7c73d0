/// A vouch for unsigned history (docs/identity.md "Vouching for unsigned
/// history"): a certificate for an origin that never signed its feeds (a
/// build before signed feeds, another system), whose key is the identity
/// key of the replica that imported them and signs their heads from then on.
/// In a cluster with an admin key the admin signs it; in an open cluster
/// the vouching replica signs it itself. It is kept and gossiped like any
/// certificate, so every replica verifies the adopted feeds, and it names
/// the voucher in its read scopes, so every replica can say who vouched.
///
/// ```swift
/// let vouch = Certificate.adoption(
///     by: admin, voucher: key.publicKey, voucherID: "gateway-1", origin: "legacy-7", scopes: ["default"], issuedMs: now)
/// vouch.vouchedBy      // "gateway-1"
/// ```
extension Certificate {
    /// The read scope of an adoption: this prefix, then the vouching replica's id.
    public static let vouchedByPrefix = "peersync/vouched-by:"

    /// An adoption of `origin`'s feeds in `scopes`, whose heads `voucher`
    /// (the key of replica `voucherID`) signs; signed by `signer`: the
    /// cluster's admin key, or in an open cluster the voucher's own key.
    public static func adoption(
        by signer: SigningKey, voucher: [UInt8], voucherID: String, origin: String, scopes: [String], issuedMs: UInt64
    ) -> Certificate {
        issue(
            by: signer, for: voucher, replicaID: origin, read: [vouchedByPrefix + voucherID],
            write: Array(Set(scopes)).sorted(), issuedMs: issuedMs, expiresMs: nil)
    }

    /// The replica that vouched for this origin's unsigned feeds, when this
    /// certificate is an adoption; `nil` for a replica's own certificate.
    public var vouchedBy: String? {
        guard readScopes.count == 1, readScopes[0].hasPrefix(Self.vouchedByPrefix) else { return nil }
        let voucher = readScopes[0].dropFirst(Self.vouchedByPrefix.count)
        return voucher.isEmpty ? nil : String(voucher)
    }

    /// Whether the admin key signed it, or (an open cluster's adoption) the voucher's own key did.
    public var isSelfSigned: Bool { adminKey == publicKey }
}
