import Replica
import Testing

@testable import SyncProtocol

/// A lost tree link, at the node: a peer announces (its cursor) events of
/// an origin we pruned on its link; when no link brings them within
/// `graftAfterMs`, that origin is grafted there.
@Suite struct LostLinkGraftTests {
    static let origin = FeedID(replicaID: "o", scope: "s")

    /// A node `me` with a session to the origin `o` (conn 1) and one to `x`
    /// (conn 2) that forwarded `o`'s first event: `o` is pruned on conn 2.
    /// Its last anti-entropy round was at 900 ms, which also asked for the
    /// state hash (every cursor sampled), so no hash is due afterwards.
    static func node() -> SyncNode {
        var configuration = SyncNode.Configuration(hello: Hello(replicaID: "me", listenPort: 1))
        configuration.stateSampleEvery = 1
        var node = SyncNode(configuration: configuration, cursor: VectorCursor())
        for (id, peer) in [(1, "o"), (2, "x")] {
            _ = node.connectionOpened(ConnectionID(id), dialed: nil, now: 0)
            _ = node.received(.hello(Hello(replicaID: peer, listenPort: 2)), on: ConnectionID(id), now: 0)
            _ = node.received(.cursor([:]), on: ConnectionID(id), now: 0)
        }
        deliver(1...1, on: 2, to: &node, now: 0)
        _ = node.tick(now: 900)  // the next round is at 1,900
        return node
    }

    /// `o`'s events at `seqs` arrive on connection `id` as its first batch and are stored.
    static func deliver(_ seqs: ClosedRange<UInt64>, on id: ConnectionID, to node: inout SyncNode, now: Milliseconds) {
        let events = SessionFixtures.events(origin, seqs)
        _ = node.received(.events(EventBatch(batchID: 1, events: events)), on: id, now: now)
        var report = IngestReport()
        report.stored = events.map { StoredEvent(event: $0, offset: Int64($0.seq), arrivalTimeMs: 0) }
        _ = node.stored(.success(StoreOutcome(report: report, cursor: [origin: seqs.upperBound])), on: id, now: now)
    }

    static func grafts(_ effects: [SyncNode.Effect]) -> [Message] {
        effects.compactMap { if case .send(2, let message) = $0, case .graft = message { message } else { nil } }
    }

    @Test func aPrunedLinkThatHoldsMoreGraftsItsOriginWhenNothingElseBringsIt() {
        var node = Self.node()
        #expect(node.sessions[2]!.prunedOrigins == ["o"])
        _ = node.received(.cursor([Self.origin: 3]), on: 2, now: 1_000)
        #expect(node.nextDeadline == 1_250)
        #expect(Self.grafts(node.tick(now: 1_249)).isEmpty)
        #expect(Self.grafts(node.tick(now: 1_250)) == [.graft(origins: ["o"])])
        #expect(node.sessions[2]!.prunedOrigins.isEmpty)
    }

    @Test func anAwaitedFeedThatArrivesIsNotGrafted() {
        var node = Self.node()
        _ = node.received(.cursor([Self.origin: 3]), on: 2, now: 1_000)
        Self.deliver(2...3, on: 1, to: &node, now: 1_010)
        #expect(Self.grafts(node.tick(now: 1_250)).isEmpty)
        #expect(node.sessions[2]!.prunedOrigins == ["o"])
        #expect(node.nextDeadline > 1_250)
    }

    @Test func aFeedThatMovesIsAwaitedAgainAndGraftedOnlyOnceItStops() {
        var node = Self.node()
        _ = node.received(.cursor([Self.origin: 9]), on: 2, now: 1_000)
        Self.deliver(2...4, on: 1, to: &node, now: 1_100)
        #expect(Self.grafts(node.tick(now: 1_250)).isEmpty)
        #expect(node.nextDeadline == 1_500)
        #expect(Self.grafts(node.tick(now: 1_500)) == [.graft(origins: ["o"])])
    }

    @Test func withoutPruningNothingIsAwaited() {
        var configuration = SyncNode.Configuration(hello: Hello(replicaID: "me", listenPort: 1))
        configuration.session.prunesLinks = false
        var node = SyncNode(configuration: configuration, cursor: VectorCursor())
        _ = node.connectionOpened(2, dialed: nil, now: 0)
        _ = node.received(.hello(Hello(replicaID: "x", listenPort: 2)), on: 2, now: 0)
        _ = node.received(.cursor([Self.origin: 3]), on: 2, now: 0)
        #expect(node.awaited.isEmpty)
    }
}
