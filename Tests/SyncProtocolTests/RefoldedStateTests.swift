import Replica
import Testing

@testable import SyncProtocol

/// A checkpoint taken, started from or moved onto may refold entities
/// without moving the cursor: the state is hashed again at that cursor,
/// and a hash asked for before the refold is not kept.
@Suite struct RefoldedStateTests {
    static func report(at cursor: VectorCursor, hash byte: UInt8) -> StateReport {
        StateReport(
            summary: StateSummary(
                eventCount: Int64(cursor.eventCount), hash: StateHash(bytes: Array(repeating: byte, count: 32))!),
            cursor: cursor)
    }

    @Test func aSummaryAtTheCursorIsHashedAgainAfterARefold() {
        var node = LostLinkGraftTests.node()  // its round at 900 ms asked for a hash
        _ = node.stateComputed(.success(Self.report(at: node.cursor, hash: 1)), now: 950)
        #expect(node.localStateIsCurrent && node.stateHashDueAt == nil)
        node.forgetLocalState()
        #expect(node.localState == nil)
        #expect(node.stateHashDueAt != nil, "the same cursor is hashed again")
    }

    @Test func aHashAskedBeforeTheRefoldIsDroppedAndAskedAgain() {
        var node = LostLinkGraftTests.node()
        #expect(node.storage.hashing)
        node.forgetLocalState()
        _ = node.stateComputed(.success(Self.report(at: node.cursor, hash: 1)), now: 950)
        #expect(node.localState == nil, "it may describe the state before the refold")
        _ = node.tick(now: 1_900)
        #expect(node.storage.hashing, "asked again")
        _ = node.stateComputed(.success(Self.report(at: node.cursor, hash: 2)), now: 1_950)
        #expect(node.localState?.summary.hash.bytes.first == 2)
    }
}
