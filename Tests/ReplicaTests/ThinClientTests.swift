import Foundation
import TestSupport
import Testing

@testable import Replica

/// A node takes a thin client's batches into a feed it keeps for the
/// client, and serves its log back as the seed's client can decode it.
@Suite("Thin clients")
struct ThinClientTests {
    let directory: TemporaryDirectory
    let clock = ManualClock(1_000_000)

    init() throws {
        directory = try TemporaryDirectory()
    }

    private func makeLog(_ name: String) throws -> EventLog {
        try EventLog.create(at: directory.path("\(name).db"), replicaID: name, options: .testing(clock: clock))
    }

    private func pushed(
        _ item: UUID, _ event: ItemEvent, time: Int64, client: String = "phone", id: UUID = UUID()
    ) -> ThinClientEvent {
        ThinClientEvent(
            eventID: id, clientReplicaID: client, timeMs: time, entityID: item.uuidString.lowercased(),
            payload: event.payload)
    }

    @Test("A batch goes to the client's feed on this node, gap-free in arrival order, answered in input order")
    func batchIsFiledInTheClientsFeed() throws {
        let log = try makeLog("relay")
        let item = UUID()
        // The seed's client numbers every batch from 1 again; the node numbers the feed itself.
        let first = try log.acceptThinClientEvents([
            pushed(item, .created(name: "Bolts", quantity: 5), time: 10),
            pushed(item, .renamed(name: "Nuts"), time: 11),
        ])
        let second = try log.acceptThinClientEvents([pushed(item, .quantityChanged(quantity: 8), time: 12)])
        let feed = FeedID(thinClient: "phone", node: "relay")
        #expect(feed.replicaID == "phone@relay" && feed.isThinClient)
        #expect((first + second).map(\.event.feed) == [feed, feed, feed])
        #expect((first + second).map(\.event.seq) == [1, 2, 3])
        #expect((first + second).map(\.offset) == [1, 2, 3])
        #expect((first + second).map(\.event.timeMs) == [10, 11, 12])
        #expect(try log.cursor()[feed] == 3)
        let bolts = try #require(try log.projection(Item.self, id: item.uuidString.lowercased()))
        #expect((bolts.name, bolts.quantity) == ("Nuts", 8))
    }

    @Test("A replayed batch, and an id repeated inside a batch, return the copy held and store nothing twice")
    func replaysStoreNothingTwice() throws {
        let log = try makeLog("relay")
        let item = UUID()
        let batch = [
            pushed(item, .created(name: "Bolts", quantity: 5), time: 10),
            pushed(item, .renamed(name: "Nuts"), time: 11),
        ]
        let stored = try log.acceptThinClientEvents(batch)
        let replayed = try log.acceptThinClientEvents([batch[1], pushed(item, .deleted, time: 12), batch[0], batch[1]])
        #expect(replayed[0] == stored[1])
        #expect(replayed[2] == stored[0])
        #expect(replayed[3] == stored[1])
        #expect(replayed[1].offset == 3)
        #expect(try log.eventCount() == 3)
    }

    @Test("One bad event refuses the whole batch with its index, and nothing is stored")
    func badEventRefusesTheBatch() throws {
        let log = try makeLog("relay")
        let item = UUID()
        let bad = [
            ThinClientEvent(
                eventID: UUID(), clientReplicaID: "phone", timeMs: 1, entityID: item.uuidString,
                payload: #"{"type":"Teleported"}"#),
            ThinClientEvent(
                eventID: UUID(), clientReplicaID: "phone", timeMs: 1, entityID: item.uuidString,
                payload: #"{"type":"QuantityChanged"}"#),
            ThinClientEvent(eventID: UUID(), clientReplicaID: "", timeMs: 1, entityID: item.uuidString, payload: "{}"),
            ThinClientEvent(
                eventID: UUID(), clientReplicaID: "phone", timeMs: 1, entityID: item.uuidString,
                payload: Fixtures.undonePayload(UUID())),
        ]
        for refused in bad {
            let batch = [
                pushed(item, .created(name: "Bolts", quantity: 5), time: 1), pushed(item, .deleted, time: 2), refused,
            ]
            let error = #expect(throws: ThinClientBatchError.self) { try log.acceptThinClientEvents(batch) }
            #expect(error?.index == 2)
            #expect(error?.description.hasPrefix("event 2: ") == true)
        }
        #expect(try log.eventCount() == 0)
    }

    @Test("A payload is stored in canonical form, however the client spelled it")
    func payloadIsStoredCanonically() throws {
        let log = try makeLog("relay")
        let item = UUID()
        let spelled = ThinClientEvent(
            eventID: UUID(), clientReplicaID: "phone", timeMs: 1, entityID: item.uuidString.lowercased(),
            payload: #"{ "quantity": 5, "type": "Created", "name": "Bolts" }"#)
        let stored = try log.acceptThinClientEvents([spelled])
        #expect(stored[0].event.payload == ItemEvent.created(name: "Bolts", quantity: 5).payload)
        #expect(try log.events(after: 0, limit: 1)[0].event.payload == stored[0].event.payload)
    }

    @Test("An edit of a deleted item is stored, and the fold ignores it")
    func editOfDeletedItemIsStored() throws {
        let log = try makeLog("relay")
        let item = UUID()
        try log.acceptThinClientEvents([
            pushed(item, .created(name: "Bolts", quantity: 5), time: 1), pushed(item, .deleted, time: 2),
        ])
        let edit = try log.acceptThinClientEvents([pushed(item, .renamed(name: "Ghost"), time: 3)])
        #expect(edit[0].offset == 3)
        let bolts = try #require(try log.projection(Item.self, id: item.uuidString.lowercased()))
        #expect(bolts.deleted && bolts.name == "Bolts")
    }

    @Test("An event pushed through two relays is folded once, whatever order the copies arrive in")
    func copiesInTwoRelaysFoldOnce() throws {
        let relayA = try makeLog("relay-a")
        let relayB = try makeLog("relay-b")
        let item = UUID()
        let id = item.uuidString.lowercased()
        try relayA.acceptThinClientEvents([pushed(item, .created(name: "Bolts", quantity: 5), time: 10)])
        try relayB.ingest(try relayA.events(after: 0, limit: 20).map(\.event))
        // The same rename reaches both relays (a lost answer, a retry at the other relay). On
        // relay B its seq is 4, so a later rename on relay A at the same time (seq 3) sorts
        // between the two copies: folding both would end at "Nuts", folding the first "Washers".
        let rename = pushed(item, .renamed(name: "Nuts"), time: 20)
        try relayA.acceptThinClientEvents([rename])
        let other = UUID()
        try relayB.acceptThinClientEvents(
            (1...3).map { pushed(other, .created(name: "Other \($0)", quantity: 1), time: Int64($0)) })
        #expect(try relayB.acceptThinClientEvents([rename])[0].event.seq == 4)
        try relayA.acceptThinClientEvents([pushed(item, .renamed(name: "Washers"), time: 20)])
        // Each relay takes the other's feed: one in one batch, one event at a time.
        try relayB.ingest(try relayA.events(after: 0, limit: 20).map(\.event))
        for event in try relayB.events(after: 0, limit: 20).map(\.event) { try relayA.ingest([event]) }
        #expect(try relayA.eventCount() == 7 && relayB.eventCount() == 7)
        #expect(try relayA.projection(Item.self, id: id)?.name == "Washers")
        #expect(try relayA.stateHash() == (try relayB.stateHash()))
        #expect(try relayA.projection(Item.self, id: id) == (try relayB.projection(Item.self, id: id)))
        // Folded once: a fresh log that takes all seven events in one batch agrees.
        let fresh = try makeLog("fresh")
        try fresh.ingest(try relayA.events(after: 0, limit: 20).map(\.event))
        #expect(try fresh.stateHash() == (try relayA.stateHash()))
        #expect(try relayA.checkIntegrity(refold: true).findings.isEmpty)
        // A replay at either relay answers its first copy; its pull shows that copy only.
        #expect(try relayB.acceptThinClientEvents([rename])[0].event.feed.replicaID == "phone@relay-b")
        #expect(
            try relayA.thinClientEvents(after: 0, limit: 20).filter { $0.event.eventID == rename.eventID }.count == 1)
        #expect(
            try relayB.thinClientEvents(after: 0, limit: 20).filter { $0.event.eventID == rename.eventID }.count == 1)
    }

    @Test("A pull serves only what the seed's client decodes, and fills the page from later events")
    func pullSkipsWhatTheSeedCannotDecode() throws {
        let log = try makeLog("relay")
        let item = UUID().uuidString.lowercased()
        try log.append(NewEvent(item: item, .created(name: "Bolts", quantity: 5)))
        try log.append(NewEvent(entityType: "note", entityID: item, payload: #"{"text":"x"}"#))
        try log.append(NewEvent(item: "not-a-uuid", .created(name: "Old", quantity: 1)))
        try log.ingest([Fixtures.rawEvent("peer", seq: 1, time: 5, entity: item, payload: #"{"type":"Teleported"}"#)])
        try log.append(NewEvent(item: item, .quantityChanged(quantity: 7)))
        try log.append(NewEvent(item: item, .noteChanged(note: "aisle 4")))
        #expect(try log.eventCount() == 6)
        let page = try log.thinClientEvents(after: 0, limit: 2)
        #expect(page.map(\.offset) == [1, 5])
        #expect(try log.thinClientEvents(after: 5, limit: 2).map(\.offset) == [6])
        #expect(try log.thinClientEvents(after: 6, limit: 2).isEmpty)
        #expect(try log.thinClientEvents(after: 0, limit: 0).isEmpty)
    }

    @Test("An undo is served as the Item event that sets the field back, under the undo's own id")
    func undoIsServedAsTheFieldItSetsBack() throws {
        let log = try makeLog("relay")
        let item = UUID().uuidString.lowercased()
        try log.append(NewEvent(item: item, .created(name: "Bolts", quantity: 5)))
        clock.advance(by: 10)
        try log.append(NewEvent(item: item, .renamed(name: "Nuts")))
        clock.advance(by: 10)
        try log.append(NewEvent(item: item, .noteChanged(note: "aisle 4")))
        clock.advance(by: 10)
        let undoNote = try log.undo(entityType: Item.entityType, entityID: item)
        clock.advance(by: 10)
        let undoRename = try log.undo(entityType: Item.entityType, entityID: item)
        let served = try log.thinClientEvents(after: 3, limit: 10)
        #expect(served.map(\.event.eventID) == [undoNote.event.eventID, undoRename.event.eventID])
        #expect(
            served.map(\.event.payload) == [
                ItemEvent.noteChanged(note: nil).payload, ItemEvent.renamed(name: "Bolts").payload,
            ])
        #expect(served.map(\.event.seq) == [undoNote.event.seq, undoRename.event.seq])
    }

    @Test("An undo of a delete is not served; an undo of that undo is served as Deleted")
    func undoOfDeleteIsNotServed() throws {
        let item = UUID().uuidString.lowercased()
        let created = Fixtures.itemEvent("r", seq: 1, time: 1, item: item, .created(name: "Bolts", quantity: 5))
        let deleted = Fixtures.itemEvent("r", seq: 2, time: 2, item: item, .deleted)
        let undo = Fixtures.rawEvent(
            "r", seq: 3, time: 3, entity: item, payload: Fixtures.undonePayload(deleted.eventID))
        let redo = Fixtures.rawEvent("r", seq: 4, time: 4, entity: item, payload: Fixtures.undonePayload(undo.eventID))
        let history = [created, deleted, undo, redo]
        #expect(ThinClientView.servedEvent(for: undo, inCanonicalOrder: history) == nil)
        #expect(ThinClientView.servedEvent(for: redo, inCanonicalOrder: history) == .deleted)
        #expect(
            ThinClientView.servedEvent(for: created, inCanonicalOrder: history) == .created(name: "Bolts", quantity: 5))
    }

    @Test("An undo of Created is served as Created with what the fold holds then; an undo of nothing is not served")
    func undoOfCreatedAndOfNothing() throws {
        let item = UUID().uuidString.lowercased()
        let created = Fixtures.itemEvent("r", seq: 1, time: 1, item: item, .created(name: "Bolts", quantity: 5))
        let renamed = Fixtures.itemEvent("r", seq: 2, time: 2, item: item, .renamed(name: "Nuts"))
        let undo = Fixtures.rawEvent(
            "r", seq: 3, time: 3, entity: item, payload: Fixtures.undonePayload(created.eventID))
        let stray = Fixtures.rawEvent("r", seq: 4, time: 4, entity: item, payload: Fixtures.undonePayload(UUID()))
        let history = [created, renamed, undo, stray]
        #expect(ThinClientView.servedEvent(for: undo, inCanonicalOrder: history) == .created(name: "Nuts", quantity: 0))
        #expect(ThinClientView.servedEvent(for: stray, inCanonicalOrder: history) == nil)
    }

    @Test("A pull skips what a session dropped: a phone's edit of an item another replica holds")
    func pullSkipsDroppedEvents() throws {
        let relay = try makeLog("relay")
        let item = UUID()
        let id = item.uuidString.lowercased()
        try relay.acceptThinClientEvents([pushed(item, .created(name: "Match", quantity: 0), time: 10)])
        let holder = try makeLog("ref")
        try holder.ingest(try Fixtures.allEvents(relay).map(\.event))
        clock.advance(by: 100)
        try holder.claim(entityType: Item.entityType, entityID: id)
        clock.advance(by: 10)
        try holder.append(NewEvent(item: id, .quantityChanged(quantity: 3)))
        try relay.ingest(try Fixtures.allEvents(holder).map(\.event))
        let late = try relay.acceptThinClientEvents([
            pushed(item, .quantityChanged(quantity: 7), time: clock.now + 10)
        ])

        let served = try relay.thinClientEvents(after: 0, limit: 10).map(\.event.payload)

        #expect(
            served == [
                ItemEvent.created(name: "Match", quantity: 0).payload, ItemEvent.quantityChanged(quantity: 3).payload,
            ])
        #expect(
            try relay.session(entityType: Item.entityType, entityID: id).dropped.map(\.event.eventID)
                == late.map(\.event.eventID))
        #expect(try relay.projection(Item.self, id: id)?.quantity == 3)
    }
}
