/// An admin's statement that a replica may no longer sync: `peerd revoke`
/// makes one, every replica of a certified cluster gossips it (message
/// `revocations`), and from then on refuses the replica's hello and its
/// events; what it stored before stays. Byte layout in docs/identity.md.
public struct Revocation: Hashable, Sendable {
    /// The first bytes of every revocation: "PSRV".
    public static let magic: [UInt8] = Array("PSRV".utf8)
    public static let format: UInt8 = 1
    static let signatureContext = Array("peersync/1 revocation".utf8)
    /// `psr1-`: the text form's prefix.
    public static let prefix = "psr1-"

    /// The admin key that signed it.
    public let adminKey: [UInt8]
    public let replicaID: String
    /// When the admin revoked it (Unix ms).
    public let revokedMs: UInt64
    public let bytes: [UInt8]

    /// Signs a revocation of `replicaID` with the admin key.
    public static func issue(by admin: SigningKey, replicaID: String, revokedMs: UInt64) -> Revocation {
        var writer = AdminSigned.start(magic, format: format, admin: admin, capacity: 128)
        writer.write(string: replicaID)
        writer.write(varint: revokedMs)
        // The bytes were just written by this build: they read back.
        return try! Revocation(bytes: AdminSigned.sign(writer, context: signatureContext, by: admin))
    }

    /// Reads a revocation and checks the admin's signature over it.
    ///
    /// - Throws: `IdentityError.malformedRevocation` or `.badRevocationSignature`.
    public init(bytes: [UInt8]) throws {
        var reader = ByteReader(bytes)
        do {
            guard try reader.readRaw(4, "magic") == Revocation.magic, try reader.readByte("format") == Revocation.format
            else {
                throw IdentityError.malformedRevocation("it does not start with \"PSRV\" and format 1")
            }
            adminKey = try reader.readRaw(32, "admin key")
            replicaID = try reader.readString("replica id")
            revokedMs = try reader.readVarint("revocation time")
            guard reader.remainingCount == Sodium.signatureSize, !replicaID.isEmpty else {
                throw IdentityError.malformedRevocation("an empty replica id, or no 64-byte signature last")
            }
        } catch let error as WireError {
            throw IdentityError.malformedRevocation("\(error)")
        }
        guard AdminSigned.verify(bytes, context: Revocation.signatureContext, adminKey: adminKey) else {
            throw IdentityError.badRevocationSignature(replicaID: replicaID)
        }
        self.bytes = bytes
    }

    /// `psr1-` then base32 of the bytes and a checksum.
    public var code: String { CheckedCode.text(prefix: Revocation.prefix, bytes: bytes) }

    /// - Throws: `IdentityError.notACode`, or the revocation's `IdentityError`.
    public init(code: String) throws {
        try self.init(bytes: try CheckedCode.bytes(of: code, prefix: Revocation.prefix, kind: "revocation code"))
    }
}
