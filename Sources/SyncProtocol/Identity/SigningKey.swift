import CSodium

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

/// Lowercase hex, for public keys in logs, the API and the CLI.
public enum Hex {
    public static func string(_ bytes: some Collection<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 15)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// The bytes of an even-length hex string, or `nil`.
    public static func bytes(_ text: String) -> [UInt8]? {
        let characters = Array(text.utf8)
        guard characters.count % 2 == 0 else { return nil }
        func value(_ character: UInt8) -> UInt8? {
            switch character {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): character - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): character - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): character - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(characters.count / 2)
        for index in stride(from: 0, to: characters.count, by: 2) {
            guard let high = value(characters[index]), let low = value(characters[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        return bytes
    }
}
