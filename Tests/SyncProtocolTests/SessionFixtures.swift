import Foundation
import Replica

@testable import SyncProtocol

/// What the pure-session tests share: events to carry and a session brought
/// past its handshake.
enum SessionFixtures {
    static let peerHello = Hello(replicaID: "peer", listenPort: 4100)

    /// Events of `feed` at seqs `range`, each at time `seq`.
    static func events(_ feed: FeedID, _ range: ClosedRange<UInt64>) -> [Event] {
        range.map {
            Event(
                eventID: UUID(), feed: feed, seq: $0, timeMs: Int64($0), entityType: "item", entityID: "i",
                payload: "{}")
        }
    }

    /// A session of replica `me` past hello and the peer's first cursor, and
    /// what that cursor made it do.
    static func syncing(
        local: VectorCursor, peer: VectorCursor, configure: (inout SyncSession.Configuration) -> Void = { _ in }
    ) -> (SyncSession, [SyncSession.Directive]) {
        var configuration = SyncSession.Configuration()
        configure(&configuration)
        var session = SyncSession(hello: Hello(replicaID: "me", listenPort: 1), configuration: configuration)
        _ = session.start(localCursor: local)
        _ = session.receive(.hello(peerHello))
        let directives = session.receive(.cursor(peer))
        return (session, directives)
    }
}
