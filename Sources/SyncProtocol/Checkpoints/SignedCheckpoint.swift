import Replica

/// A checkpoint as it travels and is kept: its content and who stands
/// behind it (docs/protocol.md "Checkpoints"). A replica that holds the
/// events it covers recomputes it (`EventLog.take`); one that starts from
/// it trusts the signature.
///
/// Bytes: "PSCP", format 1, signer kind (1 the cluster's admin, 2 the
/// replica that made it), the signer's public key (32 bytes), the content
/// (`CheckpointContent.encoded`, length-prefixed by a varint), and the
/// Ed25519 signature over "peersync/1 checkpoint statement" and every byte
/// before it.
///
/// ```swift
/// let content = try log.makeCheckpoint()
/// let signed = SignedCheckpoint.sign(content, by: adminKey, as: .admin)
/// try log.take(signed.content, statement: signed.bytes)
/// ```
public struct SignedCheckpoint: Hashable, Sendable {
    /// The first bytes of every statement: "PSCP".
    public static let magic: [UInt8] = Array("PSCP".utf8)
    public static let format: UInt8 = 1
    static let signatureContext = Array("peersync/1 checkpoint statement".utf8)

    /// Who signed it.
    public enum Signer: UInt8, Sendable {
        /// The cluster's admin key: the only signer that counts in a cluster with one.
        case admin = 1
        /// The identity key of the replica named as its maker: an open cluster's rule.
        case maker = 2
    }

    public let signer: Signer
    public let signerKey: [UInt8]
    public let content: CheckpointContent
    public let bytes: [UInt8]

    /// Signs `content` with `key`.
    public static func sign(_ content: CheckpointContent, by key: SigningKey, as signer: Signer) -> SignedCheckpoint {
        var writer = ByteWriter(capacity: 128 + content.cursor.heads.count * 80)
        writer.write(raw: magic)
        writer.write(format)
        writer.write(signer.rawValue)
        writer.write(raw: key.publicKey)
        writer.write(lengthPrefixed: content.encoded)
        // The bytes were just written by this build: they read back.
        return try! SignedCheckpoint(bytes: writer.bytes + key.sign(signatureContext + writer.bytes))
    }

    /// Reads a statement and checks its signature.
    ///
    /// - Throws: `CheckpointError.malformed`, or `.badSignature`.
    public init(bytes: [UInt8]) throws {
        var reader = ByteReader(bytes)
        do {
            guard try reader.readRaw(4, "magic") == Self.magic, try reader.readByte("format") == Self.format else {
                throw CheckpointError.malformed("it does not start with \"PSCP\" and format 1")
            }
            let kind = try reader.readByte("signer kind")
            guard let signer = Signer(rawValue: kind) else {
                throw CheckpointError.malformed("signer kind \(kind) is neither 1 (admin) nor 2 (maker)")
            }
            self.signer = signer
            signerKey = try reader.readRaw(SigningKey.size, "signer key")
            content = try CheckpointContent(encoded: try reader.readLengthPrefixed("content"))
            guard reader.remainingCount == Sodium.signatureSize else {
                throw CheckpointError.malformed("no 64-byte signature last")
            }
        } catch let error as WireError {
            throw CheckpointError.malformed("\(error)")
        }
        guard AdminSigned.verify(bytes, context: Self.signatureContext, adminKey: signerKey) else {
            throw CheckpointError.badSignature(madeBy: content.madeBy)
        }
        self.bytes = bytes
    }

    /// Whether a replica may start from it (docs/protocol.md "Who may sign
    /// a checkpoint"): with an admin key, only the admin's signature
    /// counts; in an open cluster, the signature of its maker's identity
    /// key, one of `makerKeys`.
    public func isTrusted(adminKey: [UInt8]?, makerKeys: [[UInt8]]) -> Bool {
        if let adminKey { return signer == .admin && signerKey == adminKey }
        return signer == .maker && makerKeys.contains(signerKey)
    }
}
