/// Identity codes and invite codes: bytes as text a person can paste, in the
/// cluster code's alphabet (Crockford base32, lowercase) with its 4-character
/// BLAKE2b checksum last, so a damaged code is caught before it is used.
enum CheckedCode {
    static func text(prefix: String, bytes: [UInt8]) -> String {
        prefix + ClusterCode.encode(bytes) + checksum(of: bytes)
    }

    /// The bytes of a code that starts with `prefix`.
    static func bytes(of code: String, prefix: String, kind: String) throws -> [UInt8] {
        let text = code.lowercased().filter { !$0.isWhitespace && $0 != "-" }
        let bare = prefix.filter { $0 != "-" }
        guard text.hasPrefix(bare) else {
            throw IdentityError.notACode(kind: kind, detail: "it should start with \"\(prefix)\"")
        }
        let body = Array(text.dropFirst(bare.count))
        guard body.count > ClusterCode.checksumLength else {
            throw IdentityError.notACode(kind: kind, detail: "it is cut short")
        }
        var values: [UInt8] = []
        for character in body {
            guard let value = ClusterCode.value(of: character) else {
                throw IdentityError.notACode(kind: kind, detail: "\"\(character)\" cannot appear in it")
            }
            values.append(value)
        }
        let mistyped = IdentityError.notACode(kind: kind, detail: "checksum mismatch: it was mistyped or cut short")
        guard let bytes = ClusterCode.decode(values.dropLast(ClusterCode.checksumLength)) else { throw mistyped }
        guard String(body.suffix(ClusterCode.checksumLength)) == checksum(of: bytes) else { throw mistyped }
        return bytes
    }

    private static func checksum(of bytes: [UInt8]) -> String {
        ClusterCode.checksum(of: SecretBytes(copying: bytes))
    }
}

/// A replica's identity as text: its replica id and identity public key,
/// what `peerd identity` prints and `peerd invite --for` reads.
public struct IdentityCode: Hashable, Sendable {
    public static let prefix = "psid1-"

    public var replicaID: String
    public var publicKey: [UInt8]

    public init(replicaID: String, publicKey: [UInt8]) {
        self.replicaID = replicaID
        self.publicKey = publicKey
    }

    /// `psid1-` then base32 of `public key (32) | replica id (UTF-8)` and the checksum.
    public var code: String { CheckedCode.text(prefix: Self.prefix, bytes: publicKey + Array(replicaID.utf8)) }

    /// - Throws: `IdentityError.notACode`.
    public init(code: String) throws {
        let bytes = try CheckedCode.bytes(of: code, prefix: Self.prefix, kind: "identity code")
        guard bytes.count > 32, let replicaID = String(validating: bytes.dropFirst(32), as: UTF8.self) else {
            throw IdentityError.notACode(kind: "identity code", detail: "it holds no replica id")
        }
        self.init(replicaID: replicaID, publicKey: Array(bytes.prefix(32)))
    }
}

/// What `peerd invite` prints and `peerd init --join` accepts: the cluster
/// key and a certificate for one replica.
public struct Invite: Sendable {
    public static let prefix = "psi1-"

    public var clusterKey: ClusterKey
    public var certificate: Certificate

    public init(clusterKey: ClusterKey, certificate: Certificate) {
        self.clusterKey = clusterKey
        self.certificate = certificate
    }

    /// `psi1-` then base32 of `cluster key (32) | certificate` and the checksum.
    /// It holds the cluster key: share it like a password.
    public var code: String {
        var bytes = clusterKey.secret.exposedBytes + certificate.bytes
        defer { Sodium.wipe(&bytes) }
        return CheckedCode.text(prefix: Self.prefix, bytes: bytes)
    }

    /// Whether `text` has the invite prefix (else it may be a cluster code).
    public static func looksLikeInvite(_ text: String) -> Bool {
        text.lowercased().filter { !$0.isWhitespace }.hasPrefix(prefix)
    }

    /// - Throws: `IdentityError.notACode`, or the certificate's `IdentityError`.
    public init(code: String) throws {
        var bytes = try CheckedCode.bytes(of: code, prefix: Self.prefix, kind: "invite code")
        defer { Sodium.wipe(&bytes) }
        guard bytes.count > ClusterKey.size else {
            throw IdentityError.notACode(kind: "invite code", detail: "it holds no certificate")
        }
        clusterKey = try ClusterKey(bytes: bytes.prefix(ClusterKey.size))
        certificate = try Certificate(bytes: Array(bytes.dropFirst(ClusterKey.size)))
    }
}
