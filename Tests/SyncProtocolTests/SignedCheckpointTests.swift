import Foundation
import Replica
import Testing

@testable import SyncProtocol

/// The checkpoint statement's bytes and signature (docs/protocol.md
/// "Checkpoints", whose test vectors these are).
@Suite("Signed checkpoints")
struct SignedCheckpointTests {
    static let content = CheckpointContent(
        previous: nil, madeMs: 1_700_000_000_000, madeBy: "gateway-1",
        cursor: [FeedID(replicaID: "a"): 3, FeedID(replicaID: "b"): 1],
        links: [
            FeedID(replicaID: "a"): [UInt8](repeating: 0x11, count: 32),
            FeedID(replicaID: "b"): [UInt8](repeating: 0x22, count: 32),
        ],
        entityCount: 2, stateHash: [UInt8](repeating: 0x33, count: 32),
        baseDigest: [UInt8](repeating: 0x44, count: 32))
    static let admin = try! SigningKey(seed: [UInt8](repeating: 1, count: 32))

    @Test("The content encodes as docs/protocol.md shows, and reads back")
    func contentVector() throws {
        let encoded = Self.content.encoded
        #expect(Hex.string(encoded) == Self.contentHex)
        #expect(try CheckpointContent(encoded: encoded) == Self.content)
        #expect(Hex.string(Self.content.id) == Self.contentID)
    }

    @Test("An entity base encodes as docs/protocol.md shows, and reads back")
    func baseVector() throws {
        let base = EntityBase(
            entityType: "item", entityID: "i1", state: #"{"q":1}"#,
            session: SessionState(holder: "a", claim: UUID(uuidString: "00000000-0000-4000-8000-000000000001")!),
            lastKey: EventOrderKey(
                timeMs: 5, seq: 2, eventID: UUID(uuidString: "00000000-0000-4000-8000-000000000002")!))
        var bytes: [UInt8] = []
        base.encode(into: &bytes)
        #expect(Hex.string(bytes) == Self.baseHex)
        var position = 0
        #expect(try EntityBase.decode(bytes, at: &position) == base)
        #expect(position == bytes.count)
    }

    @Test("A statement signed by the admin reads back, verifies, and counts only under that admin key")
    func signedVector() throws {
        let signed = SignedCheckpoint.sign(Self.content, by: Self.admin, as: .admin)
        #expect(Hex.string(signed.bytes) == Self.signedHex)
        let read = try SignedCheckpoint(bytes: signed.bytes)
        #expect(read.content == Self.content)
        #expect(read.isTrusted(adminKey: Self.admin.publicKey, makerKeys: []))
        #expect(!read.isTrusted(adminKey: SigningKey.generate().publicKey, makerKeys: []))
        #expect(!read.isTrusted(adminKey: nil, makerKeys: [Self.admin.publicKey]))
    }

    @Test("A changed byte, a foreign signer kind or trailing bytes are refused with a clear error")
    func tamperedStatements() throws {
        let bytes = SignedCheckpoint.sign(Self.content, by: Self.admin, as: .maker).bytes
        var flipped = bytes
        flipped[flipped.count - 1] ^= 1
        #expect(throws: CheckpointError.badSignature(madeBy: "gateway-1")) { try SignedCheckpoint(bytes: flipped) }
        var kind = bytes
        kind[5] = 9
        #expect(throws: CheckpointError.malformed("signer kind 9 is neither 1 (admin) nor 2 (maker)")) {
            try SignedCheckpoint(bytes: kind)
        }
        #expect(throws: CheckpointError.self) { try SignedCheckpoint(bytes: bytes + [0]) }
        #expect(throws: CheckpointError.self) { try SignedCheckpoint(bytes: Array(bytes.prefix(40))) }
        #expect(throws: CheckpointError.self) { try CheckpointContent(encoded: Array(Self.content.encoded.dropLast())) }
    }

    static let contentHex =
        "7065657273796e632f3120636865636b706f696e74010000000000000000000000000000000000000000000000000000"
        + "0000000000000000018bcfe5680000000009676174657761792d310000000200000001610000000764656661756c7400"
        + "000000000000031111111111111111111111111111111111111111111111111111111111111111000000016200000007"
        + "64656661756c740000000000000001222222222222222222222222222222222222222222222222222222222222222200"
        + "000000000000023333333333333333333333333333333333333333333333333333333333333333444444444444444444"
        + "4444444444444444444444444444444444444444444444"
    static let contentID = "ad1516bc419ca0ba15585a8e73bc2cb59dab0b11228bfbfa5f5f0f22c30a45a2"
    static let baseHex =
        "000000046974656d000000026931000000077b2271223a317d0000000161010000000000004000800000000000000100"
        + "0000000000000005000000000000000200000000000040008000000000000002"
    static let signedHex =
        "5053435001018a88e3dd7409f195fd52db2d3cba5d72ca6709bf1d94121bf3748801b40f6f5c87027065657273796e63"
        + "2f3120636865636b706f696e740100000000000000000000000000000000000000000000000000000000000000000000"
        + "018bcfe5680000000009676174657761792d310000000200000001610000000764656661756c74000000000000000311"
        + "1111111111111111111111111111111111111111111111111111111111111100000001620000000764656661756c7400"
        + "000000000000012222222222222222222222222222222222222222222222222222222222222222000000000000000233"
        + "333333333333333333333333333333333333333333333333333333333333334444444444444444444444444444444444"
        + "44444444444444444444444444444486d0dc1fcb6e17b0f8dc5e92b12aca78756e5771ac3253301a25f6e9e232dcb611"
        + "07517f5c9d949a9287a4a9ef7dbf6c4fb30ee792ed9158aa74517adf119503"
}
