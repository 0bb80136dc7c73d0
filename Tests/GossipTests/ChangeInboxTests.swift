import Foundation
import Replica
import Testing

@testable import Gossip

/// Commits that pile up while the event loop is busy reach the node as one
/// change (`ChangeInbox`).
@Suite struct ChangeInboxTests {
    let feed = FeedID(replicaID: "relay")
    let other = FeedID(replicaID: "phone")

    func event(_ feed: FeedID, _ seq: UInt64) -> StoredEvent {
        StoredEvent(
            event: Event(
                eventID: UUID(), feed: feed, seq: seq, timeMs: Int64(seq), entityType: "item", entityID: "e",
                payload: "{}"), offset: Int64(seq), arrivalTimeMs: 0)
    }

    @Test func onlyTheFirstChangeAsksForATakeAndTheTakeMergesThemInCommitOrder() throws {
        let inbox = ChangeInbox()
        #expect(inbox.take() == nil)
        let first = StorageExecutor.Change(
            origin: .local, cursor: [feed: 1], storedCount: 1, stored: [event(feed, 1)])
        let second = StorageExecutor.Change(
            origin: .local, cursor: [feed: 2, other: 1], storedCount: 2, stored: [event(feed, 2), event(other, 1)])
        #expect(inbox.add(first))
        #expect(!inbox.add(second), "a take is already on its way")
        let merged = try #require(inbox.take())
        #expect(merged.cursor == [feed: 2, other: 1])
        #expect(merged.committed.map(\.seq) == [1, 2, 1])
        #expect(!merged.storedElsewhere)
        #expect(inbox.take() == nil)
        #expect(inbox.add(first), "empty again: the next change asks for a take")
    }

    @Test func aCursorThatArrivesLowerNeverLowersTheMergedOne() throws {
        let inbox = ChangeInbox()
        _ = inbox.add(StorageExecutor.Change(origin: .external, cursor: [feed: 5], storedCount: 5))
        _ = inbox.add(StorageExecutor.Change(origin: .local, cursor: [feed: 4], storedCount: 0))
        #expect(try #require(inbox.take()).cursor == [feed: 5])
    }

    @Test func anotherProcessCommittingWithoutEventsOrCertificatesIsMarked() throws {
        let inbox = ChangeInbox()
        _ = inbox.add(StorageExecutor.Change(origin: .external, cursor: [feed: 3], storedCount: 0))
        #expect(try #require(inbox.take()).storedElsewhere)
        _ = inbox.add(StorageExecutor.Change(origin: .local, cursor: [feed: 3], storedCount: 0))
        #expect(try #require(inbox.take()).storedElsewhere == false)
    }
}
