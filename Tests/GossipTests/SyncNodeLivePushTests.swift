import Gossip
import Replica
import SyncProtocol
import Testing

/// A live push reads from memory what the node just committed or stored,
/// and from the log whatever it does not hold.
@Suite struct SyncNodeLivePushTests {
    /// A and B connected and in sync, with nothing stored yet.
    private func connectedPair() throws -> NodeMesh {
        let mesh = try NodeMesh(["a", "b"])
        mesh.connect("a", "b")
        mesh.tick()
        return mesh
    }

    private func pushedEvents(_ effects: [SyncNode.Effect]) -> [Event] {
        effects.flatMap { effect -> [Event] in
            if case .send(_, .events(let batch)) = effect { return batch.events }
            return []
        }
    }

    /// Two events of one item, committed on A in one append.
    private func appendTwo(on mesh: NodeMesh) throws -> [StoredEvent] {
        try mesh["a"].log.append([
            NewEvent(item: "i1", .created(name: "Bolts", quantity: 5)),
            NewEvent(item: "i1", .quantityChanged(quantity: 7)),
        ])
    }

    private func reads(_ effects: [SyncNode.Effect]) -> Int {
        effects.filter { if case .read = $0 { return true } else { return false } }.count
    }

    @Test func committedEventsArePushedWithoutARead() throws {
        let mesh = try connectedPair()
        let stored = try appendTwo(on: mesh)
        let cursor = try mesh["a"].log.cursor()
        let effects = mesh["a"].node.localChanged(cursor: cursor, committed: stored.map(\.event), now: mesh.now)
        #expect(reads(effects) == 0)
        let pushed = pushedEvents(effects)
        let fromLog = try mesh["a"].log.eventsInCanonicalOrder(
            of: [(stored[0].event.feed, 1...2)], maxEvents: 512, maxBytes: 1 << 20)
        #expect(pushed == fromLog)
        #expect(pushed.map(\.eventID) == stored.map(\.event.eventID))
    }

    @Test func withoutTheCommittedEventsTheLogIsRead() throws {
        let mesh = try connectedPair()
        try mesh["a"].log.append(NewEvent(item: "i1", .created(name: "Bolts", quantity: 5)))
        let effects = mesh["a"].node.localChanged(cursor: try mesh["a"].log.cursor(), now: mesh.now)
        #expect(reads(effects) == 1)
        #expect(pushedEvents(effects).isEmpty)
    }

    @Test func aRangeReachingPastWhatIsHeldIsReadFromTheLog() throws {
        let mesh = try connectedPair()
        // Two events committed, but the node hears only of the second: the
        // peer lacks both, so the push needs the first from the log.
        let stored = try appendTwo(on: mesh)
        let cursor = try mesh["a"].log.cursor()
        let effects = mesh["a"].node.localChanged(cursor: cursor, committed: [stored[1].event], now: mesh.now)
        #expect(reads(effects) == 1)
        #expect(pushedEvents(effects).isEmpty)
    }

    @Test func aForwardOfStoredEventsNeedsNoRead() throws {
        // Without pruning, B forwards to C what it stored from A at once.
        let mesh = try NodeMesh(["a", "b", "c"]) { $0.session.prunesLinks = false }
        mesh.connect([("b", "a"), ("c", "b")])  // connections 1 (a–b) and 2 (b–c)
        mesh.tick()
        let stored = try mesh["a"].log.append(NewEvent(item: "i1", .created(name: "Bolts", quantity: 5)))
        let push = mesh["a"].node.localChanged(
            cursor: try mesh["a"].log.cursor(), committed: [stored.event], now: mesh.now)
        guard
            case .send(1, let message)? = push.first(where: { if case .send(1, .events) = $0 { true } else { false } })
        else {
            Issue.record("A pushed nothing to B: \(push)")
            return
        }
        let received = mesh["b"].node.received([message], on: 1, now: mesh.now)
        guard let store = received.first(where: { if case .store = $0 { true } else { false } }),
            let answer = DirectStorage.execute(store, on: mesh["b"].log)
        else {
            Issue.record("B stored nothing: \(received)")
            return
        }
        let forward = answer.deliver(to: &mesh["b"].node, now: mesh.now)
        #expect(reads(forward) == 0)
        let toC = forward.flatMap { effect -> [Event] in
            if case .send(2, .events(let batch)) = effect { return batch.events }
            return []
        }
        #expect(toC == [stored.event])
    }
}
