/// What a log record reports, by a stable name: `event=peer.identified` in
/// the log line. Tests, scripts and log pipelines key on the name and the
/// record's fields; the human-readable `msg` may change freely.
/// docs/operations.md "Log events" lists every name with its fields.
public enum LogEvent: String, Sendable, Hashable, CaseIterable {
    // MARK: The daemon's lifecycle

    /// The replica runs (`replica`, `cluster`, `role`, `topology`, `peers`, `http`).
    case replicaRunning = "replica.running"
    /// A stop began (`signal`).
    case shutdownStarted = "shutdown.started"
    /// A service of the daemon stopped (`service`).
    case serviceStopped = "service.stopped"
    /// A service of the daemon failed (`service`, `error`).
    case serviceFailed = "service.failed"
    /// The stop overran its deadline; work was abandoned (`waiting_for`).
    case shutdownOverdue = "shutdown.overdue"
    /// The daemon stopped.
    case replicaStopped = "replica.stopped"

    // MARK: Connections

    /// The gossip port is open (`addr`, `max_connections`).
    case listening = "listening"
    /// The descriptor limit allows fewer peer connections than
    /// `--max-connections` asks (`wanted`, `max_connections`, `descriptor_limit`).
    case peersDescriptorsLow = "peers.descriptors_low"
    /// The listen socket cannot be watched or accept failed (`error`).
    case listenerFailed = "listener.failed"
    /// mDNS found a peer (`peer`, `addr`, `role`).
    case peerDiscovered = "peer.discovered"
    /// mDNS withdrew a peer (`peer`, `addr`).
    case peerWithdrawn = "peer.withdrawn"
    /// What mDNS discovery noticed: Avahi gone or back, a name conflict (`component`).
    case discoveryNotice = "discovery.notice"
    /// A dial failed (`addr`, `reason`).
    case dialFailed = "dial.failed"
    /// A connection finished its handshake (`conn`, `remote`, `dialed`).
    case connectionEstablished = "connection.established"
    /// A stranger was turned away before its session (`kind`, `conn`, `remote`, `reason`, and `cause`
    /// for a failed handshake: `cluster_key_mismatch`, `incompatible_version`, `refused_by_peer`, …).
    case connectionRefused = "connection.refused"
    /// A summary of refusals of one kind over an interval (`kind`, `count`, `seconds`, `last_reason`).
    case connectionsRefused = "connections.refused"
    /// An established connection closed (`conn`, `remote`, `reason`).
    case connectionClosed = "connection.closed"
    /// A frame could not be sent (`conn`, `error`).
    case sendFailed = "send.failed"
    /// A peer's hello was accepted (`peer`, `role`, `conn`).
    case peerIdentified = "peer.identified"

    // MARK: Sync

    /// A catch-up is under way, at most once a second (`peer`, `received`, `remaining`, `rate`).
    case catchingUp = "catch_up.progress"
    /// A catch-up finished (`peer`, `received`, `seconds`).
    case caughtUp = "catch_up.done"
    /// The node's topology changed (`topology`).
    case topologyChanged = "topology.changed"
    /// The last relay is gone; the mesh follows after a grace (`fallback_in_ms`).
    case relayGone = "relay.gone"
    /// A relay is connected again.
    case relayBack = "relay.back"
    /// A pruned link lost its tree link and is grafted (`feed`, `conn`, `held`).
    case linkGrafted = "link.grafted"
    /// A batch had a gap and was rejected (`peer`, `detail`).
    case gapRejected = "gap.rejected"
    /// An event failed validation and was quarantined (`peer`, `detail`).
    case eventQuarantined = "event.quarantined"
    /// An origin's clock runs far ahead of this replica's (`origin`, `ahead_ms`).
    case clockAhead = "clock.ahead"
    /// Events were refused (`cause`: `unverifiable`, `origin_scope`, `peer_scope` or `revoked`; `peer`, and
    /// `feeds`, `events` or `detail` and `fix`).
    case eventsRefused = "events.refused"
    /// A peer sent an event that forks a feed this replica holds; it is quarantined (`peer`, `detail`).
    case forkDetected = "fork.detected"
    /// Two histories of one feed: the feed is quarantined (`feed`, `seq`, `detail`).
    case feedQuarantined = "feed.quarantined"
    /// A fork proof that does not hold was ignored (`feed`, `peer`).
    case forkProofIgnored = "fork_proof.ignored"
    /// Same cursor, different state with a peer (`peer`, `detail`).
    case stateDiverged = "state.diverged"
    /// Certificates stored by another process reached the node (`replicas`).
    case certificatesLearned = "certificates.learned"

    // MARK: Checkpoints

    /// A checkpoint a peer sent was recomputed from this log's events and
    /// taken (`checkpoint`, `made_by`, `signer`, `peer`, `refolded`).
    case checkpointTaken = "checkpoint.taken"
    /// A checkpoint was refused (`cause`: `mismatch`, `untrusted` or
    /// `other_chain`; `checkpoint`, `made_by`, `signer`, `signer_key`, `peer`, `detail`).
    /// A mismatch is logged as an error: the events it covers fold to another state.
    case checkpointRefused = "checkpoint.refused"
    /// This empty replica started from a peer's checkpoint (`checkpoint`, `peer`, `entities`, `bytes`, `ms`).
    case checkpointStarted = "checkpoint.started"
    /// A start from a checkpoint failed; the history is replayed instead (`checkpoint`, `peer`, `error`).
    case checkpointStartFailed = "checkpoint.start_failed"
    /// The peer whose checkpoint's bases were being fetched folds from
    /// another one now: its pages ended early, and another offer (or a
    /// later round) is tried (`checkpoint`, `peer`, `bases`, `entities`).
    case checkpointBasesWithdrawn = "checkpoint.bases_withdrawn"
    /// This replica lacks events that a peer no longer holds, and fetches
    /// the peer's checkpoint to move onto it (`checkpoint`, `peer`, `lacking`).
    case checkpointRebasing = "checkpoint.rebasing"
    /// This replica lacked events that a peer no longer holds, and moved
    /// onto the peer's checkpoint (`checkpoint`, `peer`, `entities`, `refolded`,
    /// `bytes`, `ms`; docs/protocol.md "History floors").
    case checkpointRebased = "checkpoint.rebased"
    /// While the bases of a move came, other peers brought every event the
    /// checkpoint covers: the log does not move, it takes the checkpoint as
    /// any other (`checkpoint`, `peer`).
    case checkpointRebaseUnneeded = "checkpoint.rebase_unneeded"
    /// A move onto a peer's checkpoint failed; it is tried again at a later round (`checkpoint`, `peer`, `error`).
    case checkpointRebaseFailed = "checkpoint.rebase_failed"
    /// Every member acknowledged the checkpoint and the retention allows it:
    /// the events it covers were dropped (`checkpoint`, `events`, `bytes_before`, `bytes_after`).
    case historyDropped = "checkpoint.history_dropped"

    // MARK: Identity

    /// A replica's revocation was accepted (`replica`, `revoked_at`).
    case replicaRevoked = "replica.revoked"
    /// This replica learned its own revocation from a peer that refused it (`replica`, `revoked_at`).
    case thisReplicaRevoked = "replica.revoked_self"
    /// At start, certificates of revoked or long-expired replicas were removed (`count`, `replicas`).
    case certificatesPruned = "certificates.pruned"
    /// A revocation was ignored (`cause`: `no_certificate` or `foreign_admin_key`; `replica`, `admin_key`).
    case revocationIgnored = "revocation.ignored"
    /// Revocations could not be stored; they hold until a restart (`error`).
    case revocationsUnstored = "revocations.unstored"
    /// This replica's own certificate has expired (`reason`).
    case certificateExpired = "certificate.expired"

    // MARK: Storage

    /// The database failed in a way that degrades the replica (`while`, `fault`).
    case storageDegraded = "storage.degraded"
    /// A degraded database works again (`fault`).
    case storageRecovered = "storage.recovered"
    /// A storage operation failed without degrading the replica (`while`, `error`).
    case storageFailed = "storage.failed"
    /// A relay reaches its shared PostgreSQL store (again) (`store`).
    case sharedStoreConnected = "store.connected"
    /// A relay cannot reach its shared store: writes are refused until it is back (`store`, `error`).
    case sharedStoreUnreachable = "store.unreachable"

    // MARK: Claims

    /// A relay granted a claim (`entity`, `requester`, `request`).
    case claimGranted = "claim.granted"
    /// A relay refused a claim: the entity is held (`entity`, `requester`, `request`).
    case claimRefused = "claim.refused"
    /// A relay refused a claim nobody answered in time (`entity`, `requester`, `request`).
    case claimExpired = "claim.expired"
    /// Claim requests could not be answered (`error`).
    case claimsFailed = "claims.failed"

    // MARK: HTTP

    /// A request was answered, at debug level (`method`, `path`, `status`).
    case httpRequest = "http.request"
    /// A request failed inside the daemon: a 5xx (`method`, `path`, `status`, `error`).
    case httpRequestFailed = "http.request_failed"
    /// A streamed response ended with an error (`error`).
    case httpStreamFailed = "http.stream_failed"
    /// The descriptor limit allows fewer HTTP connections than wanted (`wanted`, `connections`).
    case httpDescriptorsLow = "http.descriptors_low"
}
