/// What certificates and revocations share: the bytes start with a magic,
/// a format byte and the admin's public key, and end with the admin's
/// Ed25519 signature over a context string and every byte before it.
enum AdminSigned {
    /// A writer that already holds `magic | format | admin key`.
    static func start(_ magic: [UInt8], format: UInt8, admin: SigningKey, capacity: Int) -> ByteWriter {
        var writer = ByteWriter(capacity: capacity)
        writer.write(raw: magic)
        writer.write(format)
        writer.write(raw: admin.publicKey)
        return writer
    }

    /// The writer's bytes with the admin's signature appended.
    static func sign(_ writer: ByteWriter, context: [UInt8], by admin: SigningKey) -> [UInt8] {
        writer.bytes + admin.sign(context + writer.bytes)
    }

    /// Whether the last 64 bytes are `adminKey`'s signature over `context` and the rest.
    static func verify(_ bytes: [UInt8], context: [UInt8], adminKey: [UInt8]) -> Bool {
        guard bytes.count > Sodium.signatureSize else { return false }
        return SigningKey.verify(
            Array(bytes.suffix(Sodium.signatureSize)), of: context + bytes.dropLast(Sodium.signatureSize),
            by: adminKey)
    }
}
