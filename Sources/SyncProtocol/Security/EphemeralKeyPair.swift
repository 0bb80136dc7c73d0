/// A one-connection X25519 key pair for `Handshake`.
///
/// Make a new one for every connection with `Handshake.ephemeralKeyPair()`;
/// the handshake machine takes it as input so that it stays pure. Its secret
/// half is wiped from memory when the last copy goes away.
public struct EphemeralKeyPair: Sendable, CustomStringConvertible {
    /// The 32-byte public key sent in the clear.
    public let publicKey: [UInt8]
    let secretKey: SecretBytes

    init(publicKey: [UInt8], secretKey: SecretBytes) {
        self.publicKey = publicKey
        self.secretKey = secretKey
    }

    /// A fresh random key pair (`crypto_kx_keypair`).
    public static func generate() -> EphemeralKeyPair {
        let (publicKey, secretKey) = Sodium.keyExchangePair()
        return EphemeralKeyPair(publicKey: publicKey, secretKey: secretKey)
    }

    /// The key pair that a 32-byte `seed` determines (`crypto_kx_seed_keypair`),
    /// for deterministic tests and simulations. Never use a fixed seed on a
    /// real connection: that gives up forward secrecy.
    ///
    /// - Throws: `SecurityError.invalidKeyLength` when `seed` is not 32 bytes.
    public init(seed: [UInt8]) throws {
        guard seed.count == Sodium.keySize else { throw SecurityError.invalidKeyLength(seed.count) }
        (publicKey, secretKey) = Sodium.keyExchangePair(seed: seed)
    }

    public var description: String { "EphemeralKeyPair(publicKey: \(publicKey.count) bytes)" }
}
