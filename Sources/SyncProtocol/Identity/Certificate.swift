import Replica

/// A cluster admin's statement that one replica's identity key may read and
/// write these scopes until a time: what `peerd invite` signs and
/// `peerd init --join` installs. Byte layout in docs/identity.md.
///
/// ```swift
/// let certificate = Certificate.issue(
///     by: admin, for: replicaKey.publicKey, replicaID: id, read: ["team", "alice"], write: ["alice"],
///     issuedMs: now, expiresMs: now + 30 * 86_400_000)
/// let same = try Certificate(bytes: certificate.bytes)
/// try same.check(replicaID: id, publicKey: replicaKey.publicKey, nowMs: now)
/// ```
public struct Certificate: Hashable, Sendable {
    /// The first bytes of every certificate: "PSCT".
    public static let magic: [UInt8] = Array("PSCT".utf8)
    /// The layout version this build writes and reads.
    public static let format: UInt8 = 1
    /// The scope that stands for every scope (a relay's, an admin's own replica).
    public static let everyScope = "*"
    /// What the admin's signature covers before the certificate's bytes.
    static let signatureContext = Array("peersync/1 certificate".utf8)

    /// The public key of the admin that signed it.
    public let adminKey: [UInt8]
    /// The replica's identity public key.
    public let publicKey: [UInt8]
    public let replicaID: String
    /// Scopes whose feeds the replica may read.
    public let readScopes: [String]
    /// Scopes whose feeds the replica may write.
    public let writeScopes: [String]
    /// When the admin signed it (Unix ms).
    public let issuedMs: UInt64
    /// When it stops being valid (Unix ms); `nil` when it never does.
    public let expiresMs: UInt64?
    /// The whole certificate, signature last, as it travels and is stored.
    public let bytes: [UInt8]

    /// Signs a certificate with the admin key.
    public static func issue(
        by admin: SigningKey, for publicKey: [UInt8], replicaID: String, read: [String], write: [String],
        issuedMs: UInt64, expiresMs: UInt64?
    ) -> Certificate {
        var writer = AdminSigned.start(magic, format: format, admin: admin, capacity: 160)
        writer.write(raw: publicKey)
        writer.write(string: replicaID)
        for scopes in [read, write] {
            writer.write(varint: UInt64(scopes.count))
            for scope in scopes { writer.write(string: scope) }
        }
        writer.write(varint: issuedMs)
        writer.write(varint: expiresMs ?? 0)
        // The bytes were just written by this build: they read back.
        return try! Certificate(bytes: AdminSigned.sign(writer, context: signatureContext, by: admin))
    }

    /// What a replica of an open cluster (no admin key) shows for its key:
    /// a certificate it signs itself, for every scope, that never expires.
    public static func selfSigned(by key: SigningKey, replicaID: String) -> Certificate {
        issue(
            by: key, for: key.publicKey, replicaID: replicaID, read: [everyScope], write: [everyScope], issuedMs: 0,
            expiresMs: nil)
    }

    /// Reads a certificate and checks the admin's signature over it.
    ///
    /// - Throws: `IdentityError.malformedCertificate` or `.badCertificateSignature`.
    public init(bytes: [UInt8]) throws {
        var reader = ByteReader(bytes)
        do {
            guard try reader.readRaw(4, "magic") == Certificate.magic else {
                throw IdentityError.malformedCertificate("it does not start with \"PSCT\"")
            }
            let format = try reader.readByte("format")
            guard format == Certificate.format else {
                throw IdentityError.malformedCertificate(
                    "format \(format); this build reads format \(Certificate.format)")
            }
            adminKey = try reader.readRaw(32, "admin key")
            publicKey = try reader.readRaw(32, "replica key")
            replicaID = try reader.readString("replica id")
            var lists: [[String]] = []
            for name in ["read scopes", "write scopes"] {
                let count = try reader.readCount(name, minimumElementSize: 2)
                var scopes: [String] = []
                for _ in 0..<count {
                    let scope = try reader.readString(name)
                    guard !scope.isEmpty else { throw IdentityError.malformedCertificate("an empty scope") }
                    scopes.append(scope)
                }
                lists.append(scopes)
            }
            readScopes = lists[0]
            writeScopes = lists[1]
            issuedMs = try reader.readVarint("issued time")
            let expires = try reader.readVarint("expiry")
            expiresMs = expires == 0 ? nil : expires
            guard reader.remainingCount == Sodium.signatureSize else {
                throw IdentityError.malformedCertificate(
                    "\(reader.remainingCount) bytes after the fields, not a \(Sodium.signatureSize)-byte signature")
            }
        } catch let error as WireError {
            throw IdentityError.malformedCertificate("\(error)")
        }
        guard !replicaID.isEmpty else { throw IdentityError.malformedCertificate("an empty replica id") }
        guard AdminSigned.verify(bytes, context: Certificate.signatureContext, adminKey: adminKey) else {
            throw IdentityError.badCertificateSignature(replicaID: replicaID)
        }
        self.bytes = bytes
    }

    /// Whether it names this replica and key and is valid at `nowMs`.
    ///
    /// - Throws: `IdentityError.certificateForAnotherReplica` or `.certificateExpired`.
    public func check(replicaID: String, publicKey: [UInt8], nowMs: UInt64) throws {
        guard replicaID == self.replicaID, publicKey == self.publicKey else {
            throw IdentityError.certificateForAnotherReplica(
                certified: self.replicaID, presented: replicaID, keyMatches: publicKey == self.publicKey)
        }
        if let expiresMs, nowMs >= expiresMs {
            throw IdentityError.certificateExpired(replicaID: replicaID, expiresMs: expiresMs)
        }
    }

    /// Scopes every certificate reads and writes, whatever it lists: the
    /// declarations of domains (docs/domains.md), which every replica must
    /// hold to fold alike. Under an admin key only the admin's count.
    public static let sharedScopes: Set<String> = [DeclarationEvent.scope]

    /// Whether the certificate lets its replica read feeds of `scope`.
    public func mayRead(_ scope: String) -> Bool {
        readScopes.contains(scope) || readScopes.contains(Certificate.everyScope)
            || Certificate.sharedScopes.contains(scope)
    }

    /// Whether the certificate lets its replica write feeds of `scope`.
    public func mayWrite(_ scope: String) -> Bool {
        writeScopes.contains(scope) || writeScopes.contains(Certificate.everyScope)
            || Certificate.sharedScopes.contains(scope)
    }
}
