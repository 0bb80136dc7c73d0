import Foundation
import Gossip
import Replica
import SyncProtocol

/// Where the daemon's claims are decided (docs/sessions.md): with a relay
/// reachable (connected, or this node being one) a claim is a request that
/// waits for a relay's grant; without one it is optimistic and appended at
/// once.
final class ClaimDesk: Sendable {
    /// How a claim stands; the raw value is its JSON spelling.
    enum Mode: String {
        /// A relay granted it.
        case granted
        /// No relay was reachable: appended at once, settled by the fold.
        case optimistic
    }

    /// How a claim ended.
    enum Outcome {
        /// The claim stands.
        case held(claim: Event, mode: Mode, grantedBy: String?)
        /// A relay refused: `holder` holds the entity (nil: the request expired).
        case refused(request: Event, holder: String?)
        /// No answer came within the wait; the request stands and may still be answered.
        case pending(request: Event)
    }

    private let storage: StorageExecutor
    private let reads: ReadReplica
    private let changes: ChangeSignal
    private let isRelay: Bool
    private let relaysConnected: @Sendable () -> [String]

    init(
        storage: StorageExecutor, reads: ReadReplica, changes: ChangeSignal, isRelay: Bool,
        relaysConnected: @escaping @Sendable () -> [String]
    ) {
        self.storage = storage
        self.reads = reads
        self.changes = changes
        self.isRelay = isRelay
        self.relaysConnected = relaysConnected
    }

    /// True when a claim needs a relay's grant now.
    var relayReachable: Bool { ClaimGrants.needsGrant(isRelay: isRelay, connectedRelays: relaysConnected()) }

    /// Claims an entity for this replica, waiting at most `waitMs` for a relay's answer.
    func claim(entityType: String, entityID: String, takeover: Bool, waitMs: Int) throws -> Outcome {
        guard relayReachable else {
            let claim = try storage.write {
                try $0.claim(entityType: entityType, entityID: entityID, takeover: takeover)
            }
            return .held(claim: claim.event, mode: .optimistic, grantedBy: nil)
        }
        let session = try reads.read { try $0.session(entityType: entityType, entityID: entityID) }
        if session.state.holder == reads.replicaID, session.state.granted,
            let standing = session.claims.last(where: { $0.event.eventID == session.state.claim })
        {
            return .held(claim: standing.event, mode: .granted, grantedBy: standing.event.writer)
        }
        let request = try storage.write {
            try $0.requestClaim(entityType: entityType, entityID: entityID, takeover: takeover).event
        }
        return try awaitAnswer(to: request, waitMs: waitMs)
    }

    /// Waits for the answer to `request`, woken by every commit.
    private func awaitAnswer(to request: Event, waitMs: Int) throws -> Outcome {
        let woken = DispatchSemaphore(value: 0)
        let token = changes.subscribe { woken.signal() }
        defer { changes.unsubscribe(token) }
        let deadline = DispatchTime.now() + .milliseconds(waitMs)
        while true {
            let answer = try reads.read {
                try $0.session(entityType: request.entityType, entityID: request.entityID).request(request.eventID)
            }
            if let answer, let event = answer.answer {
                switch SessionEvent.parse(event.payload) {
                case .claimGranted where answer.grantStood == true:
                    return .held(claim: event, mode: .granted, grantedBy: event.writer)
                case .claimGranted:
                    let holder = try reads.read {
                        try $0.session(entityType: request.entityType, entityID: request.entityID).state.holder
                    }
                    return .refused(request: request, holder: holder)
                case .claimRefused(_, let holder):
                    return .refused(request: request, holder: holder)
                default:
                    break
                }
            }
            if changes.isClosed || woken.wait(timeout: deadline) == .timedOut { return .pending(request: request) }
        }
    }
}
