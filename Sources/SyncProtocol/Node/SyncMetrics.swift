/// What sync did since the node started, for a metrics endpoint: counters
/// only grow, gauges (`connectionsOpen`, `peersConnected`, `syncLagEvents`)
/// describe the moment of the snapshot.
///
/// `SyncNode.metrics()` fills what the node knows (events, sessions,
/// latency); `GossipService.metrics()` adds the transport's bytes,
/// connections and handshake failures.
///
/// ```swift
/// let metrics = service.metrics()
/// print("peersync_events_ingested_total \(metrics.eventsIngested)")
/// ```
public struct SyncMetrics: Sendable, Hashable {
    /// Events from peers stored (and folded) by this node.
    public var eventsIngested = 0
    /// Events from peers this node already held.
    public var duplicatesIgnored = 0
    /// Events not stored because they came after a gap in their feed.
    public var eventsRejectedGap = 0
    /// Events quarantined because they break the event model.
    public var eventsRejectedInvalid = 0
    /// Events quarantined because they collide with a held event (a fork).
    public var eventsRejectedFork = 0
    /// Events a peer sent of its own feeds in scopes its certificate may not write.
    public var eventsRejectedScope = 0
    /// Events of revoked replicas' feeds, refused after the revocation was learned.
    public var eventsRejectedRevoked = 0
    /// Events whose origin's signature did not verify (altered, forged,
    /// unsigned, of an origin whose key is unknown): none stored.
    public var eventsRejectedSignature = 0
    /// Events of quarantined (forked) feeds, refused.
    public var eventsRejectedForked = 0
    /// Feeds quarantined by a fork proof.
    public var forkedFeeds = 0
    /// Feeds refused from peers for failing verification and not held
    /// since (`SyncNode.refusedFeeds`), by `RefusalReason.code`.
    public var feedsRefused: [String: Int] = [:]
    /// Distinct feed slots (feed and seq) where a fork was seen.
    public var forksDetected = 0
    /// Bytes on the wire over every connection, closed ones included.
    public var bytesReceived = 0
    public var bytesSent = 0
    /// Connections open now, including those still in the handshake.
    public var connectionsOpen = 0
    /// Sessions whose peer has said hello.
    public var peersConnected = 0
    /// Connected peers that hold our cursor but another state (`PeerRow.diverged`).
    public var peersDiverged = 0
    /// Connections that ended before their handshake finished.
    public var handshakeFailures = 0
    /// Connections in the handshake now.
    public var connectionsPending = 0
    /// Connections refused before their session started, per reason
    /// (`too_many_handshakes`, `handshake_deadline`, `bad_frame`, …).
    public var connectionsRefused: [String: Int] = [:]
    /// Events connected peers hold that this node lacks, summed over sessions.
    public var syncLagEvents: UInt64 = 0
    /// Per event stored from a peer: its arrival time minus its `time_ms`,
    /// at least 0, in seconds.
    public var syncLatency = LatencyHistogram()

    public init() {}

    /// Events offered by peers and not stored, for whatever reason.
    public var eventsRejected: Int {
        eventsRejectedGap + eventsRejectedInvalid + eventsRejectedFork + eventsRejectedScope
            + eventsRejectedRevoked + eventsRejectedSignature + eventsRejectedForked
    }
}
