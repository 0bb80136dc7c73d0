/// Who a replica says it is, in its `hello`: its identity public key, a
/// signature with that key over this connection's handshake transcript
/// (so the hello cannot be replayed on another connection), and its
/// certificate when it has one. docs/identity.md gives the bytes.
public struct PeerIdentity: Hashable, Sendable {
    /// What the proof signs before the side and the transcript.
    static let proofContext = Array("peersync/1 identity proof".utf8)

    /// The sender's identity public key (32 bytes).
    public var publicKey: [UInt8]
    /// Ed25519 over `proofContext | side | transcript` (64 bytes).
    public var proof: [UInt8]
    public var certificate: Certificate?

    public init(publicKey: [UInt8], proof: [UInt8], certificate: Certificate?) {
        self.publicKey = publicKey
        self.proof = proof
        self.certificate = certificate
    }

    /// The identity `key`'s holder shows on the connection whose handshake
    /// transcript is `binding`, as the side `role`.
    public static func proving(
        _ key: SigningKey, certificate: Certificate?, binding: [UInt8], role: Handshake.Role
    ) -> PeerIdentity {
        PeerIdentity(
            publicKey: key.publicKey, proof: key.sign(proofMessage(binding: binding, role: role)),
            certificate: certificate)
    }

    /// Whether the proof is the key's signature for this connection and side.
    func proves(binding: [UInt8], role: Handshake.Role) -> Bool {
        SigningKey.verify(proof, of: PeerIdentity.proofMessage(binding: binding, role: role), by: publicKey)
    }

    static func proofMessage(binding: [UInt8], role: Handshake.Role) -> [UInt8] {
        proofContext + [role == .initiator ? 1 : 2] + binding
    }
}

/// Which peers a replica accepts: in an open cluster (no admin key) any
/// holder of the cluster key; in a cluster with an admin key only a peer
/// whose certificate that key signed, for its replica id and key, not
/// expired. Either way a peer that shows an identity must prove it holds the key.
public struct TrustPolicy: Sendable {
    /// The admin key every certificate must be signed by; `nil`: an open cluster.
    public var adminKey: [UInt8]?
    /// Unix ms now, for certificate expiry (the shell's wall clock).
    public var wallClockMs: @Sendable () -> UInt64
    /// Replicas the admin revoked, by replica id: refused whatever they show.
    public var revoked: [String: Revocation] = [:]

    public init(adminKey: [UInt8]?, wallClockMs: @escaping @Sendable () -> UInt64) {
        self.adminKey = adminKey
        self.wallClockMs = wallClockMs
    }

    /// An open cluster: every holder of the cluster key (no expiry to check, so no clock).
    public static let open = TrustPolicy(adminKey: nil, wallClockMs: { 0 })

    /// The peer's identity when it may sync with us; it spoke as `role` on the
    /// connection whose transcript is `binding`.
    ///
    /// - Throws: an `IdentityError` that names the peer and what is wrong.
    public func admit(_ identity: PeerIdentity?, replicaID: String, binding: [UInt8], role: Handshake.Role) throws
        -> PeerIdentity?
    {
        if let revocation = revoked[replicaID] {
            throw IdentityError.revoked(replicaID: replicaID, revokedMs: revocation.revokedMs)
        }
        guard let identity else {
            if adminKey != nil { throw IdentityError.noCertificate(replicaID: replicaID) }
            return nil
        }
        guard identity.proves(binding: binding, role: role) else { throw IdentityError.badProof(replicaID: replicaID) }
        guard let adminKey else { return identity }
        guard let certificate = identity.certificate else { throw IdentityError.noCertificate(replicaID: replicaID) }
        if let voucher = certificate.vouchedBy {
            throw IdentityError.adoptionShownAsIdentity(replicaID: replicaID, voucher: voucher)
        }
        guard certificate.adminKey == adminKey else {
            throw IdentityError.untrustedAdmin(replicaID: replicaID, adminKey: certificate.adminKey)
        }
        try certificate.check(replicaID: replicaID, publicKey: identity.publicKey, nowMs: wallClockMs())
        return identity
    }
}
