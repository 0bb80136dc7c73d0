import Foundation
import Replica
import Testing

@testable import SyncProtocol

/// A session with a certified peer in a cluster with an admin key: it tells
/// the peer only of feeds the peer may read, and stores of the peer's own
/// feeds only those in scopes it may write (docs/identity.md "Scopes").
@Suite struct ScopedSessionTests {
    /// The peer is `alice-tablet`: read alice, team; write alice (the test vector).
    static let binding = [UInt8](repeating: 9, count: 32)
    let team = FeedID(replicaID: "me", scope: "team")
    let secret = FeedID(replicaID: "me", scope: "bob")
    let peersOwn = FeedID(replicaID: "alice-tablet", scope: "drafts")

    func session(trust: TrustPolicy = IdentityTests.trust()) -> SyncSession {
        var configuration = SyncSession.Configuration()
        configuration.trust = trust
        return SyncSession(
            hello: Hello(replicaID: "me", listenPort: 1), configuration: configuration,
            binding: ScopedSessionTests.binding, role: .responder)
    }

    var peerHello: Hello {
        Hello(
            replicaID: "alice-tablet", listenPort: 2,
            identity: PeerIdentity.proving(
                IdentityTests.replica, certificate: IdentityTests.vector(), binding: ScopedSessionTests.binding,
                role: .initiator))
    }

    @Test func thePeerHearsOnlyOfFeedsItMayReadAndOfItsOwn() {
        var session = session()
        _ = session.start(localCursor: [team: 3, secret: 5, peersOwn: 2])
        #expect(
            session.receive(.hello(peerHello)) == [.identified(peerHello), .send(.cursor([team: 3, peersOwn: 2]))])
        // It lacks everything: the team feed and its own are read for it, never the hidden one.
        #expect(
            session.receive(.cursor([:])) == [
                .readEvents(
                    ranges: [FeedRange(feed: peersOwn, seqs: 1...2), FeedRange(feed: team, seqs: 1...3)],
                    maxEvents: session.configuration.batchEvents,
                    maxBytes: session.configuration.batchBytes)
            ])
        // Later writes to the hidden feed are neither announced nor pushed.
        #expect(session.localCursorChanged([team: 3, secret: 9, peersOwn: 2]).isEmpty)
        #expect(session.tick() == [.send(.cursor([:]))])
        #expect(session.progress.toSend == 5)
    }

    @Test func thePeersOwnEventsOutsideItsWriteScopesAreLeftOut() {
        var session = session()
        _ = session.start(localCursor: [:])
        _ = session.receive(.hello(peerHello))
        _ = session.receive(.cursor([:]))
        let allowed = SessionFixtures.events(FeedID(replicaID: "alice-tablet", scope: "alice"), 1...2)
        let outside = SessionFixtures.events(FeedID(replicaID: "alice-tablet", scope: "team"), 1...3)
        let forwarded = SessionFixtures.events(FeedID(replicaID: "carol", scope: "team"), 1...1)
        let directives = session.receive(.events(EventBatch(batchID: 1, events: allowed + outside + forwarded)))
        #expect(
            directives == [
                .refusedWrites([FeedID(replicaID: "alice-tablet", scope: "team"): 3]),
                .ingest(EventBatch(batchID: 1, events: allowed + forwarded)),
            ])
    }

    @Test func anOpenClusterLimitsNothing() {
        var session = session(trust: .open)
        _ = session.start(localCursor: [team: 3, secret: 5])
        #expect(session.receive(.hello(peerHello)) == [.identified(peerHello), .send(.cursor([team: 3, secret: 5]))])
        _ = session.receive(.cursor([:]))
        let events = SessionFixtures.events(FeedID(replicaID: "alice-tablet", scope: "team"), 1...2)
        #expect(
            session.receive(.events(EventBatch(batchID: 1, events: events)))
                == [.ingest(EventBatch(batchID: 1, events: events))])
    }
}
