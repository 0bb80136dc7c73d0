import CSodium

/// The 32-byte secret every member of one cluster holds.
///
/// A handshake succeeds only between two nodes that hold the same cluster
/// key, and the key never crosses the wire: each side proves it holds the key
/// with a MAC over the handshake transcript. `peerd init` makes one; other
/// devices join with its share `code`.
///
/// ```swift
/// let key = ClusterKey.generate()
/// try key.write(toFile: "/var/lib/peerd/cluster.key")  // mode 0600
/// print(key.code)          // psc1-…, typed or pasted on the next device
/// let same = try ClusterKey(code: key.code)
/// ```
///
/// The bytes live in memory that is wiped when the last copy of the key goes
/// away; `description` and `dump` show only the fingerprint.
public struct ClusterKey: Sendable, Equatable, CustomStringConvertible, CustomReflectable {
    /// Size of a cluster key in bytes.
    public static let size = 32

    package let secret: SecretBytes

    package init(secret: SecretBytes) {
        self.secret = secret
    }

    /// A new random key from the system's secure random source.
    public static func generate() -> ClusterKey {
        Sodium.ensureReady()
        return ClusterKey(secret: SecretBytes(count: size) { randombytes_buf($0.baseAddress!, $0.count) })
    }

    /// The key made of exactly 32 `bytes`.
    ///
    /// - Throws: `SecurityError.invalidKeyLength` for any other length.
    public init(bytes: some Collection<UInt8>) throws {
        guard bytes.count == ClusterKey.size else { throw SecurityError.invalidKeyLength(bytes.count) }
        secret = SecretBytes(copying: bytes)
    }

    /// A short public name for the cluster: 8 lowercase hex characters of a
    /// BLAKE2b MAC, keyed with the cluster key, over a fixed context string.
    ///
    /// It tells clusters apart (mDNS TXT `cluster`) and reveals nothing about
    /// the key. Two clusters share a fingerprint with probability 2⁻³².
    public var fingerprint: String {
        let mac = Sodium.hash(Array(ClusterKey.fingerprintContext.utf8), key: secret, outputSize: 16)
        return mac.prefix(4).map { byte in
            let hex = String(byte, radix: 16)
            return byte < 0x10 ? "0" + hex : hex
        }.joined()
    }

    static let fingerprintContext = "peersync/1 cluster fingerprint"

    /// Constant-time comparison of the two keys' bytes.
    public static func == (lhs: ClusterKey, rhs: ClusterKey) -> Bool {
        lhs.secret.isEqual(to: rhs.secret)
    }

    public var description: String { "ClusterKey(fingerprint: \(fingerprint))" }

    public var customMirror: Mirror { Mirror(self, children: ["fingerprint": fingerprint]) }
}
