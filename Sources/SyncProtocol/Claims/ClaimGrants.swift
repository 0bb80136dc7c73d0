import Replica

/// The rules by which relays answer claims (docs/sessions.md), as a pure
/// core: the daemon's `ClaimGrantor` and the simulator both run it and
/// carry out its directives on their own log.
///
/// Of the relays connected to each other, only the one with the lowest
/// replica id answers, every request it stores, one at a time in arrival
/// order, so that of two requests for one entity exactly one is granted;
/// the others' requests reach it through sync. A request nobody answered
/// within `requestLifetimeMs` of its arrival is refused as expired by the
/// leader, and let go by a follower. The state is in memory only: a
/// restarted relay scans its log again (answering is idempotent).
///
/// ```swift
/// var grants = ClaimGrants()
/// while grants.scanned(try log.claimRequests(after: grants.scannedOffset, limit: ClaimGrants.scanLimit),
///                      newest: newest) {}
/// for case .answer(let request, let expired) in grants.decide(leader: true, nowMs: clock.nowMs()) {
///     _ = try log.answerClaimRequest(request.event, expired: expired)
///     grants.answered(request)
/// }
/// ```
public struct ClaimGrants: Sendable {
    /// How long a request waits for an answer before it is refused.
    public static let requestLifetimeMs: Int64 = 30_000
    /// The most requests one scan of the log reads.
    public static let scanLimit = 500

    /// What the shell does with a waiting request.
    public enum Directive: Sendable, Equatable {
        /// Answer it (`EventLog.answerClaimRequest`): grant or refuse by the
        /// entity's session, or refuse as expired.
        case answer(StoredEvent, expired: Bool)
    }

    /// The local offset up to which the log was scanned for requests.
    public private(set) var scannedOffset: Int64 = 0
    /// Requests seen and not settled yet, in arrival order.
    public private(set) var waiting: [StoredEvent] = []

    public init() {}

    /// True when `replicaID` answers: it has the lowest id of itself and the
    /// relays it is connected to.
    public static func isLeader(_ replicaID: String, connectedRelays: [String]) -> Bool {
        connectedRelays.allSatisfy { replicaID <= $0 }
    }

    /// True when a claim on this node waits for a relay's grant: it is a
    /// relay, or it is connected to one. Without one a claim is optimistic.
    public static func needsGrant(isRelay: Bool, connectedRelays: [String]) -> Bool {
        isRelay || !connectedRelays.isEmpty
    }

    /// A scan of the log after `scannedOffset` found `found`; `newest` is
    /// the log's last offset read before the scan (a request stored after it
    /// is found by the next one). True when the scan was cut at
    /// `scanLimit` and more may follow.
    public mutating func scanned(_ found: [StoredEvent], newest: Int64) -> Bool {
        waiting += found
        let full = found.count >= Self.scanLimit
        let reached = full ? found[found.count - 1].offset : newest
        scannedOffset = max(scannedOffset, reached, found.last?.offset ?? 0)
        return full
    }

    /// What to do now with the waiting requests: the leader answers each,
    /// as expired when its lifetime is over, and forgets it once the shell
    /// says it is `answered` (a failed write is answered again next time);
    /// a follower lets go of the expired ones at once (the leader refuses
    /// them) and waits on the rest.
    public mutating func decide(leader: Bool, nowMs: Int64) -> [Directive] {
        let expired = { (request: StoredEvent) in nowMs - request.arrivalTimeMs > Self.requestLifetimeMs }
        guard leader else {
            waiting.removeAll(where: expired)
            return []
        }
        return waiting.map { .answer($0, expired: expired($0)) }
    }

    /// The shell stored the answer to `request` (or found it answered).
    public mutating func answered(_ request: StoredEvent) {
        waiting.removeAll { $0.event.eventID == request.event.eventID }
    }
}
