import Foundation
import Gossip
import SyncProtocol

/// The daemon's peer table as `GET /peers` and `peerd peers --json` show it.
struct PeerList: Codable {
    struct Peer: Codable {
        var source: String
        var address: String?
        var replica_id: String?
        var role: String?
        var state: String
        var next_dial_in_ms: Int64?
        var last_error: String?
        /// Wall-clock time (ms since 1970) the two replicas were last in sync.
        var last_sync_ms: Int64?
        var events_to_receive: UInt64
        var events_to_send: UInt64
        var in_sync: Bool
        /// The last time both replicas hashed their state at one cursor, the hashes were equal.
        var state_verified: Bool
        /// What the peer last reported of its state.
        var state_hash: String?
        var event_count: Int64?
        var clock_skew_ms: Int64?
        /// While connected: the identity the peer proved, with its certificate.
        var identity: IdentityReport?
        /// Same cursor, other state: the two hold different events at the same feed positions.
        var diverged: Bool
        /// Feeds refused from this peer for failing verification, held by no event since.
        var refused_feeds: [RefusedFeedReport]
        /// The peer's domain versions by entity type, from its last state
        /// message (docs/domains.md); null before one.
        var domains: [String: Int64]?
    }

    /// Wall-clock time of the snapshot, in ms since 1970.
    var updated_ms: Int64
    var replica_id: String
    /// `hub` or `mesh`: the shape of this node's connections now.
    var topology: String
    /// `--topology`: `auto`, `mesh` or `hub`.
    var topology_mode: String
    var peers: [Peer]

    init(replicaID: String, topology: Topology, mode: TopologyMode, rows: [PeerRow], nowMs: Int64) {
        updated_ms = nowMs
        replica_id = replicaID
        self.topology = topology.rawValue
        topology_mode = mode.rawValue
        peers = rows.map { row in
            Peer(
                source: row.source.rawValue, address: row.address?.description, replica_id: row.replicaID,
                role: row.role?.description,
                state: row.state.rawValue, next_dial_in_ms: row.nextDialInMs, last_error: row.lastError,
                last_sync_ms: row.lastSyncAgoMs.map { nowMs - $0 }, events_to_receive: row.eventsToReceive,
                events_to_send: row.eventsToSend, in_sync: row.inSync, state_verified: row.stateVerified,
                state_hash: row.stateIsCurrent ? row.stateHash : nil,
                event_count: row.stateIsCurrent ? row.eventCount : nil,
                clock_skew_ms: row.clockSkewMs, identity: row.identity.map(IdentityReport.init), diverged: row.diverged,
                refused_feeds: row.refusedFeeds.map(RefusedFeedReport.init), domains: row.domains)
        }
    }

    var json: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return String(decoding: (try? encoder.encode(self)) ?? Data("{}".utf8), as: UTF8.self)
    }
}
