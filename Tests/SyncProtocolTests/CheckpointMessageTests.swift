import Foundation
import Replica
import Testing

@testable import SyncProtocol

/// The messages of checkpoints over the wire (docs/protocol.md
/// "Checkpoints over the wire") and the session's held cursor.
@Suite("Checkpoint messages")
struct CheckpointMessageTests {
    static let maker = try! SigningKey(seed: [UInt8](repeating: 2, count: 32))
    static let signed = SignedCheckpoint.sign(SignedCheckpointTests.content, by: maker, as: .maker)
    static let base = EntityBase(
        entityType: "item", entityID: "i1", state: #"{"q":1}"#, session: .free,
        lastKey: EventOrderKey(timeMs: 5, seq: 2, eventID: UUID(uuidString: "00000000-0000-4000-8000-000000000002")!))

    private func roundTrip(_ message: Message) throws -> Message {
        var encoder = MessageEncoder()
        var decoder = MessageDecoder()
        return try decoder.decode(encoder.encode(message))
    }

    @Test("Each checkpoint message reads back as it was written")
    func roundTrips() throws {
        let ack = CheckpointAck.sign(
            checkpoint: Self.signed.content.id, replicaID: "gateway-1", ackedMs: 1_700_000_000_001, by: Self.maker)
        let messages: [Message] = [
            .checkpoints([Self.signed]), .checkpoints([]), .checkpointAcks([ack]),
            .basesWanted(checkpoint: Self.signed.content.id, after: nil),
            .basesWanted(checkpoint: Self.signed.content.id, after: EntityName(type: "item", id: "i0")),
            .bases(checkpoint: Self.signed.content.id, page: [Self.base, Self.base], last: false),
            .bases(checkpoint: Self.signed.content.id, page: [], last: true),
            .historyFloor([FeedID(replicaID: "a"): 40, FeedID(replicaID: "b", scope: "tools"): 7]),
            .historyFloor(VectorCursor()),
        ]
        for message in messages { #expect(try roundTrip(message) == message) }
    }

    @Test("A page of bases travels compressed when both sides offer it, and reads back")
    func compressedBases() throws {
        var encoder = MessageEncoder(compression: true)
        encoder.peerAcceptsCompression = true
        var decoder = MessageDecoder(compression: true)
        // An empty replica's request declares its zstd before any cursor: the peer may compress the pages.
        var asking = MessageEncoder(compression: true)
        var peer = MessageDecoder(compression: true)
        _ = try peer.decode(asking.encode(.basesWanted(checkpoint: Self.signed.content.id, after: nil)))
        #expect(peer.peerOffersCompression)
        let page = Message.bases(
            checkpoint: Self.signed.content.id, page: Array(repeating: Self.base, count: 50), last: false)
        let bytes = encoder.encode(page)
        #expect(bytes.first == 8)
        var plain = MessageEncoder()
        #expect(bytes.count < plain.encode(page).count / 4)
        #expect(try decoder.decode(bytes) == page)
    }

    @Test("A forged acknowledgement, a tampered statement or a short bases page is refused")
    func malformed() throws {
        var ack = CheckpointAck.sign(
            checkpoint: Self.signed.content.id, replicaID: "gateway-1", ackedMs: 1, by: Self.maker
        ).bytes
        ack[40] ^= 1
        #expect(throws: CheckpointError.self) { try CheckpointAck(bytes: ack) }
        var encoder = MessageEncoder()
        var decoder = MessageDecoder()
        var bytes = encoder.encode(.checkpoints([Self.signed]))
        bytes[bytes.count - 70] ^= 1
        #expect(throws: WireError.self) { try decoder.decode(bytes) }
        bytes = encoder.encode(.bases(checkpoint: Self.signed.content.id, page: [Self.base], last: true))
        // One base claimed, two announced: the count no longer fits the bytes.
        bytes[34] = 2
        #expect(throws: WireError.self) { try decoder.decode(bytes) }
        #expect(throws: WireError.self) { try decoder.decode([17, 0] + Self.signed.content.id + [2]) }
    }

    @Test("A held cursor goes only once released, and the peer's first cursor waits for it")
    func heldCursor() {
        var configuration = SyncSession.Configuration()
        configuration.holdsCursor = true
        var session = SyncSession(hello: Hello(replicaID: "me", listenPort: 1), configuration: configuration)
        _ = session.start(localCursor: VectorCursor())
        #expect(session.receive(.hello(SessionFixtures.peerHello)).map(\.name) == ["identified"])
        #expect(session.cursorHeld)
        let feed = FeedID(replicaID: "peer")
        #expect(session.receive(.cursor([feed: 5])).map(\.name) == ["peerCursorHeld"])
        #expect(!session.isSyncing)
        // A local write while held is not pushed.
        #expect(session.localCursorChanged([FeedID(replicaID: "me"): 1]).isEmpty)
        let released = session.releaseCursor(localCursor: [feed: 3])
        #expect(released.first == .send(.cursor([feed: 3])))
        #expect(session.isSyncing)
        #expect(session.progress.toReceive == 2)
        #expect(session.releaseCursor(localCursor: [feed: 3]).isEmpty)
    }

    @Test("A session whose log lacks the history below its checkpoint sends a peer behind it nothing of those feeds")
    func historyFloor() {
        let feed = FeedID(replicaID: "me")
        let (session, directives) = SessionFixtures.syncing(local: [feed: 10], peer: [:]) {
            $0.historyFloor = [feed: 6]
        }
        _ = session
        #expect(!directives.contains { if case .readEvents = $0 { true } else { false } })
        let (_, behindFloor) = SessionFixtures.syncing(local: [feed: 10], peer: [feed: 6]) {
            $0.historyFloor = [feed: 6]
        }
        #expect(
            behindFloor.contains {
                if case .readEvents(let ranges, _, _) = $0 { ranges.first?.seqs == 7...10 } else { false }
            })
    }
}

extension SyncSession.Directive {
    /// The case's name, for comparing directive lists.
    fileprivate var name: String {
        switch self {
        case .identified: "identified"
        case .peerCursorHeld: "peerCursorHeld"
        case .send(let message): "send \(message.name)"
        default: "\(self)".prefix { $0 != "(" }.description
        }
    }
}
