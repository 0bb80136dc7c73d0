/// Everything a handshake derives from the shared secret: the two key
/// proofs and the two direction keys.
///
/// ```
/// shared = X25519(own ephemeral secret, peer ephemeral public)
/// T      = BLAKE2b-256("peersync/1 handshake" | version u16 BE | epk_I | epk_R)
/// master = BLAKE2b-256(shared | T, key = cluster key)
/// x      = BLAKE2b-256(label_x, key = master) for each label below
/// ```
struct HandshakeKeySchedule {
    static let transcriptContext = "peersync/1 handshake"
    static let responderProofLabel = "peersync/1 responder proof"
    static let initiatorProofLabel = "peersync/1 initiator proof"
    static let initiatorToResponderLabel = "peersync/1 initiator to responder key"
    static let responderToInitiatorLabel = "peersync/1 responder to initiator key"

    let responderProof: SecretBytes
    let initiatorProof: SecretBytes
    let initiatorToResponder: SecretBytes
    let responderToInitiator: SecretBytes
    /// T: public, and unique to the connection (both ephemeral keys are in it).
    let transcript: [UInt8]

    /// The schedule, or `nil` when the peer's public key is unusable.
    init?(
        clusterKey: ClusterKey, ownSecret: SecretBytes, peerPublicKey: [UInt8], version: UInt16,
        initiatorPublicKey: [UInt8], responderPublicKey: [UInt8]
    ) {
        guard let shared = Sodium.sharedSecret(secretKey: ownSecret, peerPublicKey: peerPublicKey) else { return nil }
        var writer = ByteWriter(capacity: 96)
        writer.write(raw: HandshakeKeySchedule.transcriptContext.utf8)
        writer.write(uint16: version)
        writer.write(raw: initiatorPublicKey)
        writer.write(raw: responderPublicKey)
        let transcript = Sodium.hash(writer.bytes)
        self.transcript = transcript
        var input: [UInt8] = []
        input.reserveCapacity(Sodium.keySize + transcript.count)
        shared.withUnsafeBytes { input.append(contentsOf: $0) }
        input += transcript
        var masterBytes = Sodium.hash(input, key: clusterKey.secret)
        defer {
            Sodium.wipe(&input)
            Sodium.wipe(&masterBytes)
        }
        let master = SecretBytes(copying: masterBytes)
        responderProof = master.derive(Array(HandshakeKeySchedule.responderProofLabel.utf8))
        initiatorProof = master.derive(Array(HandshakeKeySchedule.initiatorProofLabel.utf8))
        initiatorToResponder = master.derive(Array(HandshakeKeySchedule.initiatorToResponderLabel.utf8))
        responderToInitiator = master.derive(Array(HandshakeKeySchedule.responderToInitiatorLabel.utf8))
    }

    /// The session keys for `role`: it seals with its own direction's key.
    func sessionKeys(for role: Handshake.Role) -> SessionKeys {
        switch role {
        case .initiator:
            SessionKeys(sending: initiatorToResponder, receiving: responderToInitiator, transcript: transcript)
        case .responder:
            SessionKeys(sending: responderToInitiator, receiving: initiatorToResponder, transcript: transcript)
        }
    }

    /// Whether `proof` equals `expected`, compared in constant time.
    static func matches(_ proof: [UInt8], _ expected: SecretBytes) -> Bool {
        proof.withUnsafeBytes { received in expected.withUnsafeBytes { Sodium.constantTimeEqual(received, $0) } }
    }
}
