import PeerNet
import Replica

/// One known peer as `peerd peers` shows it: how it was found, where it
/// is, whether it is connected, and how far apart the two replicas are.
public struct PeerRow: Sendable, Hashable {
    public enum State: String, Sendable {
        case connected, dialing, waiting, retired
    }

    /// How the address was learned; the raw value is its JSON spelling.
    public enum Source: String, Sendable {
        case configured, discovered, exchanged
        /// A peer that dialed us: no address of it is known.
        case inbound

        init(_ source: PeerSource) {
            switch source {
            case .configured: self = .configured
            case .discovered: self = .discovered
            case .exchanged: self = .exchanged
            }
        }
    }

    public var source: Source
    public var address: PeerAddress?
    public var replicaID: String?
    /// From the hello while connected, else from discovery or an earlier
    /// hello; `nil` when nothing said yet.
    public var role: NodeRole?
    public var state: State
    /// While waiting: milliseconds until the next dial.
    public var nextDialInMs: Milliseconds?
    public var lastError: String?
    /// Milliseconds since the two cursors last agreed (`nil`: never seen in sync).
    public var lastSyncAgoMs: Milliseconds?
    /// Events the peer holds that we lack (from cursors; 0 when not connected).
    public var eventsToReceive: UInt64
    /// Events we hold that the peer lacks.
    public var eventsToSend: UInt64
    /// While connected: neither side lacks anything of the other's (the
    /// two cursors are equal, as this node's session sees them).
    public var inSync = false
    /// The peer's state hash (64 lowercase hex digits) as it last reported
    /// it on the current connection; `nil` before its first `state` message.
    public var stateHash: String?
    /// The peer's event count as it last reported it.
    public var eventCount: Int64?
    /// True when the reported state describes the cursor the peer holds as
    /// far as this node knows (no events moved since the report), so that
    /// `stateHash` is the peer's state now.
    public var stateIsCurrent = false
    /// True when the last time both replicas hashed their state at one
    /// cursor, the hashes were equal; with `inSync`, the peer holds our
    /// events and folds them to our state (also while writes go on).
    public var stateVerified = false
    /// The most this replica's events' times were ahead of our wall clock
    /// when they arrived (beyond the tolerated skew); `nil` if never.
    public var clockSkewMs: Int64?
    /// While connected: the identity the peer proved in its hello, with its
    /// certificate; `nil` for a peer that showed none (an open cluster).
    public var identity: PeerIdentity?
    /// Scopes leave one side a part of the other's feeds, so the two state
    /// hashes need not match: this node hides feeds from the peer, the
    /// peer's certificate lets it read a scope ours does not, or the cluster
    /// has an admin key and the peer sent no state summary (which a peer
    /// that hides feeds from us never sends).
    public var partialView = false
    /// The two replicas hold the same cursor and both described it with a
    /// current state summary, yet the state hashes differ: some feed holds
    /// different events at the same positions on the two sides (a fork, e.g.
    /// a replica restored from an old copy that wrote again).
    public var diverged = false
    /// Feeds this node refused from this peer's replica for failing
    /// verification, and holds no events of since (`SyncNode.refusedFeeds`).
    public var refusedFeeds: [FeedRefusal] = []
    /// The peer's domain versions by entity type, as its last `state`
    /// message said (docs/domains.md); nil before one (empty from a build that sends none).
    public var domains: [String: Int64]?
}

extension SyncNode {
    /// The replica ids of the relays this node has an identified session
    /// with, sorted: what `ClaimGrants` decides leadership and grants by.
    /// A session lost in a partition counts until the node notices that it
    /// went silent.
    public var connectedRelays: [String] {
        sessions.keys.sorted().compactMap { id in
            guard let peer = sessions[id]!.peer, peer.role == .relay else { return nil }
            return peer.replicaID
        }
    }

    /// Every address the peer manager knows, and every connection that did
    /// not come from one of them (peers that dialed us).
    public func peerTable(now: Milliseconds) -> [PeerRow] {
        var rows: [PeerRow] = []
        var shown = Set<ConnectionID>()
        for target in manager.targets.values.sorted(by: { $0.address < $1.address }) {
            var row = PeerRow(
                source: PeerRow.Source(target.source), address: target.address, replicaID: target.replicaID,
                role: target.role,
                state: .waiting, lastError: target.lastError, eventsToReceive: 0, eventsToSend: 0)
            let viaOther = target.replicaID.flatMap { replicaID in
                manager.connections.values.first { $0.replicaID == replicaID }?.id
            }
            switch target.state {
            case .connected(let id):
                shown.insert(id)
                fill(&row, connection: id)
            case .waiting where viaOther != nil:
                // Not dialed: the replica is connected through another connection.
                shown.insert(viaOther!)
                fill(&row, connection: viaOther!)
            case .dialing:
                row.state = .dialing
            case .waiting where manager.isDialable(target):
                row.nextDialInMs = max(0, target.nextDialAt - now)
            case .waiting:
                break  // Not dialed in this topology (a replica's address in the hub): no redial to show.
            case .retired:
                row.state = .retired
            }
            if let replicaID = row.replicaID, let at = lastInSyncAt(replicaID) { row.lastSyncAgoMs = now - at }
            row.clockSkewMs = row.replicaID.flatMap { clockSkewMs(ofReplica: $0) }
            row.refusedFeeds = refusedFeeds(from: row.replicaID)
            rows.append(row)
        }
        for id in manager.connections.keys.sorted() where !shown.contains(id) {
            let connection = manager.connections[id]!
            if connection.dialed != nil { continue }
            var row = PeerRow(
                source: .inbound, address: nil, replicaID: connection.replicaID, role: nil, state: .connected,
                eventsToReceive: 0, eventsToSend: 0)
            fill(&row, connection: id)
            if let replicaID = row.replicaID, let at = lastInSyncAt(replicaID) { row.lastSyncAgoMs = now - at }
            row.clockSkewMs = row.replicaID.flatMap { clockSkewMs(ofReplica: $0) }
            row.refusedFeeds = refusedFeeds(from: row.replicaID)
            rows.append(row)
        }
        return rows
    }

    private func refusedFeeds(from replicaID: String?) -> [FeedRefusal] {
        guard let replicaID else { return [] }
        return refusedFeeds.filter { $0.peer == replicaID }
    }

    /// Whether the session's peer showed another state than ours at one
    /// cursor, the last time both hashed at one (see `PeerRow.diverged`).
    func diverges(_ session: SyncSession) -> Bool {
        guard !session.hidesFeeds, let check = session.stateCheck else { return false }
        return !check.matched
    }

    /// The heads of the feeds of declarations (scope `peersync/domains`) in `cursor`.
    private static func declarations(in cursor: VectorCursor) -> [FeedID: UInt64] {
        cursor.heads.filter { $0.key.scope == DeclarationEvent.scope }
    }

    private func fill(_ row: inout PeerRow, connection id: ConnectionID) {
        row.state = .connected
        guard let session = sessions[id] else { return }
        if let peer = session.peer {
            row.replicaID = peer.replicaID
            row.role = peer.role
            if row.address == nil, let advert = advert(for: id) { row.address = advert.address }
        }
        row.identity = session.peerIdentity
        row.diverged = diverges(session)
        row.partialView =
            session.hidesFeeds || session.peerMayReadMore
            || (session.configuration.trust.adminKey != nil && session.peerState == nil)
        row.eventsToReceive = session.progress.toReceive
        row.eventsToSend = session.progress.toSend
        row.inSync = session.isSyncing && session.progress == (0, 0) && !diverges(session)
        row.stateVerified = session.stateCheck?.matched == true
        if let state = session.peerState {
            row.stateHash = state.summary.hash.hex
            row.eventCount = state.summary.eventCount
            row.stateIsCurrent = session.peerStateIsCurrent
            row.domains = state.summary.domains
        }
        // A peer that holds exactly the declarations this node holds folds the same versions, whether or
        // not it sends `state` (one that hides feeds from us never does).
        let ours = Self.declarations(in: cursor)
        if let localState, Self.declarations(in: session.peerCursor) == ours,
            Self.declarations(in: localState.cursor) == ours
        {
            row.domains = localState.summary.domains
        }
    }
}
