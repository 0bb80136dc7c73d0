import CSodium

/// The few libsodium calls the security layer makes, with Swift arrays in and
/// out. `sodium_init` runs once, before the first call.
enum Sodium {
    /// Size of a cluster key, an X25519 key, a BLAKE2b-256 digest.
    static let keySize = 32
    /// Size of the Poly1305 tag a sealed frame carries.
    static let tagSize = 16
    /// Size of a ChaCha20-Poly1305 IETF nonce.
    static let nonceSize = 12

    /// Runs `sodium_init` exactly once (Swift initialises globals lazily and
    /// thread-safely); every entry point below reads it first.
    private static let ready: Bool = sodium_init() >= 0

    static func ensureReady() {
        precondition(ready, "libsodium failed to initialise (sodium_init)")
    }

    /// BLAKE2b of `message` with `outputSize` bytes (16...64), keyed when
    /// `key` is given (16...64 bytes).
    static func hash(
        _ message: UnsafeRawBufferPointer, key: UnsafeRawBufferPointer?, outputSize: Int = keySize
    ) -> [UInt8] {
        ensureReady()
        var output = [UInt8](repeating: 0, count: outputSize)
        let status = output.withUnsafeMutableBufferPointer { out in
            crypto_generichash(
                out.baseAddress!, outputSize, message.baseAddress?.assumingMemoryBound(to: UInt8.self),
                UInt64(message.count), key?.baseAddress?.assumingMemoryBound(to: UInt8.self), key?.count ?? 0)
        }
        precondition(status == 0, "crypto_generichash refused its arguments")
        return output
    }

    /// BLAKE2b of `message`, keyed with a secret when `key` is given.
    static func hash(_ message: [UInt8], key: SecretBytes? = nil, outputSize: Int = keySize) -> [UInt8] {
        message.withUnsafeBytes { input in
            guard let key else { return hash(input, key: nil, outputSize: outputSize) }
            return key.withUnsafeBytes { hash(input, key: $0, outputSize: outputSize) }
        }
    }

    /// A fresh X25519 key pair: (public key, secret key).
    static func keyExchangePair() -> ([UInt8], SecretBytes) {
        ensureReady()
        var publicKey = [UInt8](repeating: 0, count: keySize)
        let secretKey = SecretBytes(count: keySize) { secret in
            publicKey.withUnsafeMutableBufferPointer { _ = crypto_kx_keypair($0.baseAddress!, secret.baseAddress!) }
        }
        return (publicKey, secretKey)
    }

    /// The X25519 key pair that `seed` (32 bytes) determines.
    static func keyExchangePair(seed: [UInt8]) -> ([UInt8], SecretBytes) {
        ensureReady()
        precondition(seed.count == keySize, "a key pair seed is 32 bytes")
        var publicKey = [UInt8](repeating: 0, count: keySize)
        let secretKey = SecretBytes(count: keySize) { secret in
            publicKey.withUnsafeMutableBufferPointer { pk in
                _ = crypto_kx_seed_keypair(pk.baseAddress!, secret.baseAddress!, seed)
            }
        }
        return (publicKey, secretKey)
    }

    /// X25519 of our secret key and the peer's public key, or `nil` when the
    /// peer's key is a low-order point (the result would be all zero).
    static func sharedSecret(secretKey: SecretBytes, peerPublicKey: [UInt8]) -> SecretBytes? {
        ensureReady()
        guard peerPublicKey.count == keySize else { return nil }
        var status: Int32 = -1
        let shared = SecretBytes(count: keySize) { out in
            secretKey.withUnsafeBytes { secret in
                status = crypto_scalarmult(
                    out.baseAddress!, secret.baseAddress!.assumingMemoryBound(to: UInt8.self), peerPublicKey)
            }
        }
        let allZero =
            shared.withUnsafeBytes { sodium_is_zero($0.baseAddress!.assumingMemoryBound(to: UInt8.self), $0.count) }
            == 1
        return status == 0 && !allZero ? shared : nil
    }

    /// Size of an Ed25519 signature.
    static let signatureSize = 64

    /// The Ed25519 key pair that `seed` (32 bytes) determines: (public key,
    /// libsodium's 64-byte secret key).
    static func signingPair(seed: SecretBytes) -> ([UInt8], SecretBytes) {
        ensureReady()
        precondition(seed.count == keySize, "a signing key seed is 32 bytes")
        var publicKey = [UInt8](repeating: 0, count: keySize)
        let secretKey = SecretBytes(count: 64) { secret in
            seed.withUnsafeBytes { seedBytes in
                publicKey.withUnsafeMutableBufferPointer { pk in
                    _ = crypto_sign_seed_keypair(
                        pk.baseAddress!, secret.baseAddress!, seedBytes.baseAddress!.assumingMemoryBound(to: UInt8.self)
                    )
                }
            }
        }
        return (publicKey, secretKey)
    }

    /// The Ed25519 signature of `message` with a secret key from `signingPair`.
    static func sign(_ message: [UInt8], secretKey: SecretBytes) -> [UInt8] {
        ensureReady()
        var signature = [UInt8](repeating: 0, count: signatureSize)
        secretKey.withUnsafeBytes { secret in
            _ = crypto_sign_detached(
                &signature, nil, message, UInt64(message.count), secret.baseAddress!.assumingMemoryBound(to: UInt8.self)
            )
        }
        return signature
    }

    /// Whether `signature` is `publicKey`'s Ed25519 signature of `message`.
    static func verify(signature: [UInt8], of message: [UInt8], publicKey: [UInt8]) -> Bool {
        ensureReady()
        guard signature.count == signatureSize, publicKey.count == keySize else { return false }
        return crypto_sign_verify_detached(signature, message, UInt64(message.count), publicKey) == 0
    }

    /// Constant-time equality of two byte strings of the same length.
    static func constantTimeEqual(_ lhs: UnsafeRawBufferPointer, _ rhs: UnsafeRawBufferPointer) -> Bool {
        ensureReady()
        guard lhs.count == rhs.count else { return false }
        guard lhs.count > 0 else { return true }
        return sodium_memcmp(lhs.baseAddress, rhs.baseAddress, lhs.count) == 0
    }

    /// Overwrites `bytes` with zeros in a way the optimiser keeps.
    static func wipe(_ bytes: inout [UInt8]) {
        bytes.withUnsafeMutableBytes { sodium_memzero($0.baseAddress, $0.count) }
    }
}
