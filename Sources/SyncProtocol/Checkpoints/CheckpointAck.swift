import Replica

/// A replica's statement that it folds from a checkpoint: it held every
/// event the checkpoint covers and took it (or started from it). Garbage
/// collection counts these (docs/protocol.md "Checkpoint acknowledgements"):
/// a replica drops covered events only once every member acknowledged.
///
/// Bytes: "PSCA", format 1, the replica's identity key (32 bytes), the
/// checkpoint id (32 bytes), the replica id (varint-length string), when it
/// acknowledged (Unix ms, varint), and the Ed25519 signature by that key
/// over "peersync/1 checkpoint ack" and every byte before it.
public struct CheckpointAck: Hashable, Sendable {
    /// The first bytes of every acknowledgement: "PSCA".
    public static let magic: [UInt8] = Array("PSCA".utf8)
    public static let format: UInt8 = 1
    static let signatureContext = Array("peersync/1 checkpoint ack".utf8)

    /// The identity key that signed it.
    public let key: [UInt8]
    /// The checkpoint's id (`CheckpointContent.id`).
    public let checkpoint: [UInt8]
    public let replicaID: String
    public let ackedMs: UInt64
    public let bytes: [UInt8]

    /// `replicaID` acknowledges `checkpoint`, signed with its identity key.
    public static func sign(checkpoint: [UInt8], replicaID: String, ackedMs: UInt64, by key: SigningKey)
        -> CheckpointAck
    {
        var writer = AdminSigned.start(magic, format: format, admin: key, capacity: 160)
        writer.write(raw: checkpoint)
        writer.write(string: replicaID)
        writer.write(varint: ackedMs)
        // The bytes were just written by this build: they read back.
        return try! CheckpointAck(bytes: AdminSigned.sign(writer, context: signatureContext, by: key))
    }

    /// Reads an acknowledgement and checks that its key signed it (whether
    /// that key is the replica's is for the reader to check).
    ///
    /// - Throws: `CheckpointError.malformed`, or `.badSignature`.
    public init(bytes: [UInt8]) throws {
        var reader = ByteReader(bytes)
        do {
            guard try reader.readRaw(4, "magic") == Self.magic, try reader.readByte("format") == Self.format else {
                throw CheckpointError.malformed("it does not start with \"PSCA\" and format 1")
            }
            key = try reader.readRaw(SigningKey.size, "key")
            checkpoint = try reader.readRaw(32, "checkpoint id")
            replicaID = try reader.readString("replica id")
            ackedMs = try reader.readVarint("acknowledgement time")
            guard reader.remainingCount == Sodium.signatureSize, !replicaID.isEmpty else {
                throw CheckpointError.malformed("an empty replica id, or no 64-byte signature last")
            }
        } catch let error as WireError {
            throw CheckpointError.malformed("\(error)")
        }
        guard AdminSigned.verify(bytes, context: Self.signatureContext, adminKey: key) else {
            throw CheckpointError.badSignature(madeBy: replicaID)
        }
        self.bytes = bytes
    }
}
