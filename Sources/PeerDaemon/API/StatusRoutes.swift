import Foundation
import Gossip
import Replica
import SyncProtocol

/// `/health`, `/status` and `/peers`.
extension DaemonAPI {
    /// `200 {"status":"ok",…}`, or `503 {"status":"degraded",…,"storage":{…}}`
    /// while a storage fault keeps the replica degraded.
    func health() -> HTTPResponse {
        let storage = StorageReport(storage.health)
        let body = Health(
            status: storage.state, replica_id: reads.replicaID, storage: storage.isDegraded ? storage : nil)
        return .json(storage.isDegraded ? 503 : 200, value: body)
    }

    func status() throws -> HTTPResponse {
        // The sync node hashes once the log is quiet; `peerd wait` polls this
        // several times a second, so reuse that hash while it is current.
        let known = service.localState()
        let replica = try reads.read { try ReplicaStatus(log: $0, known: known) }
        let rows = service.peerTable()
        let connected = rows.filter { $0.state == .connected }
        var status = DaemonStatus(
            replica: replica, role: settings.role.description, identity: settings.identity,
            storage: StorageReport(storage.health),
            sync: DaemonStatus.Sync(
                peers_connected: connected.count, max_connections: settings.maxConnections,
                events_missing: connected.reduce(0) { $0 + $1.eventsToReceive },
                events_to_send: connected.reduce(0) { $0 + $1.eventsToSend },
                peers_diverged: connected.filter(\.diverged).count,
                peers_in_sync: connected.filter { row in
                    // With scopes, equal cursors of what each may see are in sync.
                    row.inSync && (row.partialView || row.stateVerified)
                }.count),
            peer_identities: connected.compactMap { row in
                row.replicaID.map {
                    PeerIdentityReport(replica_id: $0, identity: row.identity.map(IdentityReport.init))
                }
            },
            revoked: service.revocations().map(RevokedReplica.init),
            refused_feeds: service.refusedFeeds().map(RefusedFeedReport.init),
            domains_differ: connected.compactMap { row in
                guard let id = row.replicaID, let domains = row.domains, domains != replica.domains else { return nil }
                return DomainDifference(replica_id: id, domains: domains)
            },
            clock_skew_ms: Dictionary(
                rows.compactMap { row in row.replicaID.flatMap { id in row.clockSkewMs.map { (id, $0) } } },
                uniquingKeysWith: max))
        if let listener = settings.sharedStore {
            let (storeID, offset) = try reads.read { (try $0.sharedStoreID(), try $0.sharedOffset()) }
            let reachability = listener.reachability
            status.shared_store = SharedStoreReport(
                store_id: storeID ?? "", server_offset: offset, reachable: reachability.connected,
                error: reachability.error)
        }
        if let checkpoints = service.checkpointStatus() {
            status.refused_checkpoints = checkpoints.refused.map(RefusedCheckpointReport.init)
            status.history = HistoryReport(checkpoints.collection, nowMs: storage.clock.nowMs())
        }
        return .json(value: status)
    }

    /// `POST /revocations` with `{"revocation":"psr1-…"}` (what `peerd
    /// revoke` sends): the node keeps it, ends the replica's sessions and
    /// tells every peer; `200` with `/status`'s `revoked` list.
    func revoke(_ request: HTTPRequest) throws -> HTTPResponse {
        guard case .string(let code)? = try Self.jsonObject(request)["revocation"] else {
            throw APIError.badRequest("the body must be {\"revocation\":\"psr1-…\"}")
        }
        let revocation: Revocation
        do {
            revocation = try Revocation(code: code)
        } catch {
            throw APIError(422, "invalid_revocation", "\(error)")
        }
        guard let certificate = settings.certificate else {
            throw APIError(
                409, "not_certified", "this replica has no certificate; revocations take effect in a certified cluster")
        }
        guard certificate.adminKey == revocation.adminKey else {
            throw APIError(
                422, "invalid_revocation", "the revocation is signed by another admin key than this cluster's")
        }
        guard service.revoke([revocation]) else { throw APIError(503, "shutting_down", "the daemon is shutting down") }
        return .json(value: ["revoked": service.revocations().map(RevokedReplica.init)])
    }

    /// `POST /checkpoints` with `{"checkpoint":"<hex statement>"}` (what
    /// `peerd checkpoint make` and `take` send while the daemon runs): the
    /// node recomputes it from the log, takes it and shows it to its peers;
    /// `202` with the checkpoint's id, since the take runs after the reply.
    func giveCheckpoint(_ request: HTTPRequest) throws -> HTTPResponse {
        guard case .string(let hex)? = try Self.jsonObject(request)["checkpoint"], let bytes = Hex.bytes(hex) else {
            throw APIError.badRequest("the body must be {\"checkpoint\":\"<statement in hex>\"}")
        }
        let checkpoint: SignedCheckpoint
        do {
            checkpoint = try SignedCheckpoint(bytes: bytes)
        } catch {
            throw APIError(422, "invalid_checkpoint", "\(error)")
        }
        guard service.give(checkpoint) else { throw APIError(503, "shutting_down", "the daemon is shutting down") }
        return .json(202, value: ["checkpoint": Hex.string(checkpoint.content.id)])
    }

    /// `POST /retired` with `{"replica":"ID"}` (what `peerd retire` sends in
    /// an open cluster): the replica's missing acknowledgement no longer
    /// holds the history; `200 {"retired":[…]}`.
    func retire(_ request: HTTPRequest) throws -> HTTPResponse {
        guard case .string(let replicaID)? = try Self.jsonObject(request)["replica"], !replicaID.isEmpty else {
            throw APIError.badRequest("the body must be {\"replica\":\"ID\"}")
        }
        guard settings.certificate == nil else {
            throw APIError(
                409, "certified", "in a certified cluster the admin retires a replica with a revocation (peerd retire)")
        }
        guard let retired = service.retire(replicaID) else {
            throw APIError(503, "shutting_down", "the daemon is shutting down")
        }
        return .json(value: ["retired": retired.sorted()])
    }

    func peers() -> HTTPResponse {
        let list = PeerList(
            replicaID: reads.replicaID, topology: service.topology(), mode: settings.topologyMode,
            rows: service.peerTable(), nowMs: storage.clock.nowMs())
        return .json(200, list.json)
    }
}

/// What `GET /status` reports: the replica's own state (as `peerd status`)
/// and the daemon's view of sync.
struct DaemonStatus: Codable {
    struct Sync: Codable {
        var peers_connected: Int
        /// The most peer connections this daemon keeps open: `--max-connections`, or its role's
        /// default, as the descriptor limit allowed it (absent from daemons that predate it).
        var max_connections: Int?
        /// Events connected peers hold that this node lacks (from cursors).
        var events_missing: UInt64
        /// Events this node holds that connected peers lack.
        var events_to_send: UInt64
        /// Connected peers with our cursor but another state hash: a fork (`GET /peers` `diverged`).
        var peers_diverged: Int
        /// Connected peers with the same cursor that reported the same state
        /// hash; where scopes leave one side a part of the other's feeds
        /// (`PeerRow.partialView`), equal cursors suffice.
        var peers_in_sync: Int
    }

    var replica: ReplicaStatus
    var role: String
    /// This replica's identity key and certificate.
    var identity: IdentityReport
    /// Each connected peer's identity, as it proved it in its hello.
    var peer_identities: [PeerIdentityReport]
    /// The replicas the cluster's admin revoked, as this node knows.
    var revoked: [RevokedReplica]
    /// Feeds refused from peers for failing verification, held by no event since.
    var refused_feeds: [RefusedFeedReport]
    /// Connected peers whose domain versions differ from this replica's
    /// (`replica.domains`), with theirs: they may fold a type differently
    /// until both hold the same declarations (docs/domains.md).
    var domains_differ: [DomainDifference]
    var storage: StorageReport
    var sync: Sync
    /// Per peer replica: the most its event times were ahead of our clock.
    var clock_skew_ms: [String: Int64]
    /// Checkpoints this node refused: one that does not match its events,
    /// one signed by a key it does not trust, one of another chain.
    var refused_checkpoints: [RefusedCheckpointReport] = []
    /// Where dropping the history under the checkpoint stands.
    var history: HistoryReport?
    /// A relay's shared PostgreSQL store (`--store`), else absent.
    var shared_store: SharedStoreReport?

    init(
        replica: ReplicaStatus, role: String, identity: IdentityReport, storage: StorageReport, sync: Sync,
        peer_identities: [PeerIdentityReport], revoked: [RevokedReplica], refused_feeds: [RefusedFeedReport],
        domains_differ: [DomainDifference], clock_skew_ms: [String: Int64]
    ) {
        self.domains_differ = domains_differ
        self.replica = replica
        self.role = role
        self.identity = identity
        self.peer_identities = peer_identities
        self.revoked = revoked
        self.refused_feeds = refused_feeds
        self.storage = storage
        self.sync = sync
        self.clock_skew_ms = clock_skew_ms
    }

    enum CodingKeys: String, CodingKey {
        case role, identity, storage, sync, peer_identities, revoked, refused_feeds, domains_differ, clock_skew_ms
        case refused_checkpoints, history, shared_store
    }

    var text: String {
        var lines = [
            replica.text, "daemon      running, role \(role)", "identity    \(identity.public_key), \(identity.text)",
            "storage     \(storage.text)",
            "sync        \(sync.peers_connected) peers connected\(sync.max_connections.map { " (at most \($0))" } ?? ""), "
                + "\(sync.peers_in_sync) in sync, "
                + "\(sync.events_missing) events missing, \(sync.events_to_send) to send",
        ]
        if sync.peers_diverged > 0 {
            lines.append(
                "fork        \(sync.peers_diverged) peers hold this cursor with another state (`peerd peers`: diverged)"
            )
        }
        for replica in revoked {
            lines.append("revoked     \(replica.replica_id) at \(IdentityError.time(replica.revoked_ms))")
        }
        lines += refused_feeds.map(\.text)
        if let domains = replica.domains, !domains.isEmpty {
            lines.append("domains     \(DomainDifference.list(domains))")
        }
        for peer in domains_differ {
            lines.append("domains     \(peer.replica_id) folds other versions: \(DomainDifference.list(peer.domains))")
        }
        for (peer, skew) in clock_skew_ms.sorted(by: { $0.key < $1.key }) {
            lines.append("clock skew  \(peer) ahead by \(skew) ms")
        }
        lines += refused_checkpoints.map(\.text)
        lines += history?.lines ?? []
        if let store = shared_store { lines.append(store.text) }
        return lines.joined(separator: "\n")
    }

    /// The replica's fields sit at the top level, beside the daemon's.
    func encode(to encoder: Encoder) throws {
        try replica.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(role, forKey: .role)
        try container.encode(identity, forKey: .identity)
        try container.encode(peer_identities, forKey: .peer_identities)
        try container.encode(revoked, forKey: .revoked)
        try container.encode(refused_feeds, forKey: .refused_feeds)
        try container.encode(domains_differ, forKey: .domains_differ)
        try container.encode(storage, forKey: .storage)
        try container.encode(sync, forKey: .sync)
        try container.encode(clock_skew_ms, forKey: .clock_skew_ms)
        try container.encode(refused_checkpoints, forKey: .refused_checkpoints)
        try container.encodeIfPresent(history, forKey: .history)
        try container.encodeIfPresent(shared_store, forKey: .shared_store)
    }

    init(from decoder: Decoder) throws {
        replica = try ReplicaStatus(from: decoder)
        let container = try decoder.container(keyedBy: CodingKeys.self)
        role = try container.decode(String.self, forKey: .role)
        identity = try container.decode(IdentityReport.self, forKey: .identity)
        peer_identities = try container.decode([PeerIdentityReport].self, forKey: .peer_identities)
        revoked = try container.decode([RevokedReplica].self, forKey: .revoked)
        refused_feeds = try container.decode([RefusedFeedReport].self, forKey: .refused_feeds)
        domains_differ = try container.decodeIfPresent([DomainDifference].self, forKey: .domains_differ) ?? []
        storage = try container.decode(StorageReport.self, forKey: .storage)
        sync = try container.decode(Sync.self, forKey: .sync)
        clock_skew_ms = try container.decode([String: Int64].self, forKey: .clock_skew_ms)
        refused_checkpoints =
            try container.decodeIfPresent([RefusedCheckpointReport].self, forKey: .refused_checkpoints) ?? []
        history = try container.decodeIfPresent(HistoryReport.self, forKey: .history)
        shared_store = try container.decodeIfPresent(SharedStoreReport.self, forKey: .shared_store)
    }
}

/// A relay's shared store, as `GET /status` shows it (docs/relay.md).
struct SharedStoreReport: Codable, Equatable {
    /// The store's id, made when its first relay attached.
    var store_id: String
    /// The newest server offset this relay's log holds of the store.
    var server_offset: Int64
    /// Whether the relay holds a connection to PostgreSQL now.
    var reachable: Bool
    /// Why not, when it does not.
    var error: String?

    var text: String {
        "store       \(store_id) up to offset \(server_offset), "
            + (reachable ? "reachable" : "unreachable: \(error ?? "no connection yet")")
    }
}

/// A connected peer's identity, as `GET /status` lists it.
struct PeerIdentityReport: Codable, Equatable {
    var replica_id: String
    /// Absent for a peer that showed none.
    var identity: IdentityReport?
}

/// A revoked replica, as `GET /status` lists it.
struct RevokedReplica: Codable, Equatable {
    var replica_id: String
    var revoked_ms: UInt64

    init(_ revocation: Revocation) {
        replica_id = revocation.replicaID
        revoked_ms = revocation.revokedMs
    }
}

/// `GET /health`.
struct Health: Codable {
    var status: String
    var replica_id: String
    /// Only while degraded.
    var storage: StorageReport?
}

/// The replica's storage health as `/health` and `/status` show it.
struct StorageReport: Codable {
    /// `ok` or `degraded`.
    var state: String
    /// While degraded: `damaged`, `diskFull`, `io`, `readOnly` or `deleted`.
    var fault: String?
    /// While degraded: what happened and what to do.
    var message: String?
    /// While degraded: since when, in ms since 1970.
    var since_ms: Int64?
    /// Storage faults seen since the daemon started.
    var faults: Int

    init(_ health: StorageHealth) {
        state = health.state
        fault = health.fault?.kind.rawValue
        message = health.fault?.description
        since_ms = health.sinceMs
        faults = health.faults
    }

    var isDegraded: Bool { state != "ok" }

    var text: String {
        guard let fault, let message else { return state }
        return "\(state) (\(fault)): \(message)"
    }
}

/// A connected peer whose domain versions differ from this replica's.
struct DomainDifference: Codable {
    var replica_id: String
    var domains: [String: Int64]

    /// `inspection=2, meter=1` (`none` when empty).
    static func list(_ domains: [String: Int64]) -> String {
        domains.isEmpty
            ? "none" : domains.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ", ")
    }
}
