import CSodium
import Replica

/// An Ed25519 key pair: a replica's identity key, or a cluster's admin key.
///
/// Only the 32-byte seed is kept on disk (`identity.key`, mode 0600);
/// libsodium derives the key pair from it. `description` shows the public
/// key alone.
///
/// ```swift
/// let key = SigningKey.generate()
/// let signature = key.sign(Array("hello".utf8))
/// SigningKey.verify(signature, of: Array("hello".utf8), by: key.publicKey)   // true
/// ```
extension FeedSigner {
    /// Signs a replica's feed heads with its identity key.
    public init(_ key: SigningKey) {
        self.init(sign: { key.sign($0) })
    }
}

public struct SigningKey: Sendable, CustomStringConvertible {
    /// Size of the seed and of a public key, in bytes.
    public static let size = 32

    /// The seed the key pair is derived from; what the key file holds.
    package let seed: SecretBytes
    private let secretKey: SecretBytes
    /// The Ed25519 public key (32 bytes).
    public let publicKey: [UInt8]

    package init(seed: SecretBytes) {
        self.seed = seed
        (publicKey, secretKey) = Sodium.signingPair(seed: seed)
    }

    /// The key pair that 32 `seed` bytes determine (for test vectors).
    ///
    /// - Throws: `SecurityError.invalidKeyLength` for any other length.
    public init(seed bytes: some Collection<UInt8>) throws {
        guard bytes.count == SigningKey.size else { throw SecurityError.invalidKeyLength(bytes.count) }
        self.init(seed: SecretBytes(copying: bytes))
    }

    /// A new random key pair from the system's secure random source.
    public static func generate() -> SigningKey {
        Sodium.ensureReady()
        return SigningKey(seed: SecretBytes(count: size) { randombytes_buf($0.baseAddress!, $0.count) })
    }

    /// The Ed25519 signature (64 bytes) of `message`.
    public func sign(_ message: [UInt8]) -> [UInt8] {
        Sodium.sign(message, secretKey: secretKey)
    }

    /// Whether `signature` is the signature of `message` by the holder of `publicKey`.
    public static func verify(_ signature: [UInt8], of message: [UInt8], by publicKey: [UInt8]) -> Bool {
        Sodium.verify(signature: signature, of: message, publicKey: publicKey)
    }

    public var description: String { "SigningKey(public: \(Hex.string(publicKey)))" }
}
