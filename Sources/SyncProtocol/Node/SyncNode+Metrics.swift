import Replica

extension SyncNode {
    /// The node's part of the metrics: events ingested and rejected, forks,
    /// sync latency, sessions and lag. Bytes, connections still in the
    /// handshake and handshake failures are the transport's
    /// (`GossipService.metrics()`); here `connectionsOpen` counts sessions.
    ///
    /// ```swift
    /// let metrics = node.metrics()
    /// metrics.syncLatency.count == metrics.eventsIngested  // true
    /// ```
    public func metrics() -> SyncMetrics {
        var metrics = counters
        metrics.connectionsOpen = sessions.count
        metrics.peersConnected = sessions.values.filter { $0.peer != nil }.count
        metrics.peersDiverged = sessions.values.filter(diverges).count
        metrics.forkedFeeds = forkProofs.count
        metrics.feedsRefused = refusals.countsByReason
        metrics.syncLagEvents = sessions.values.reduce(0) { total, session in
            let (sum, overflow) = total.addingReportingOverflow(session.progress.toReceive)
            return overflow ? UInt64.max : sum
        }
        return metrics
    }

    /// The most this replica's events' times were ahead of our wall clock
    /// when they arrived (beyond the tolerated skew), or `nil` if never.
    public func clockSkewMs(ofReplica replicaID: String) -> Int64? { clockSkewMs[replicaID] }

    /// Counts what one ingest from a peer did. Latency is each stored
    /// event's arrival time (the log's wall clock, `EventLog.Options.wallClock`)
    /// minus its `time_ms`.
    mutating func record(_ report: IngestReport, from peer: String) {
        counters.eventsIngested += report.stored.count
        counters.duplicatesIgnored += report.duplicates
        counters.eventsRejectedGap += report.gaps.reduce(0) { $0 + $1.rejectedCount }
        counters.eventsRejectedInvalid += report.invalid.count
        counters.eventsRejectedFork += report.forks.count
        for fork in report.forks where forkSlots.insert(FeedSlot(feed: fork.feed, seq: fork.seq)).inserted {
            counters.forksDetected += 1
        }
        for stored in report.stored {
            let lagMs = max(0, stored.arrivalTimeMs - stored.event.timeMs)
            counters.syncLatency.record(seconds: Double(lagMs) / 1_000)
        }
        for fork in report.forks {
            emit(
                LogRecord(.warning, .forkDetected, "fork quarantined", [("peer", peer), ("detail", fork.description)]))
        }
        for gap in report.gaps {
            emit(LogRecord(.info, .gapRejected, "gap rejected", [("peer", peer), ("detail", gap.description)]))
        }
        for invalid in report.invalid {
            emit(
                LogRecord(
                    .warning, .eventQuarantined, "invalid event quarantined",
                    [("peer", peer), ("detail", invalid.description)]))
        }
        for (origin, skew) in report.clockSkewMs.sorted(by: { $0.key < $1.key }) {
            emit(LogRecord(.warning, .clockAhead, "clock far ahead", [("origin", origin), ("ahead_ms", "\(skew)")]))
            clockSkewMs[origin] = max(clockSkewMs[origin] ?? 0, skew)
        }
    }

    /// Events a peer sent of its own feeds in scopes its certificate may not
    /// write: counted, and logged with the peer and the feeds.
    mutating func noteRefusedWrites(_ events: [FeedID: Int], on id: ConnectionID) {
        let total = events.values.reduce(0, +)
        counters.eventsRejectedScope += total
        let feeds = events.keys.sorted().map { "\($0.replicaID)/\($0.scope)=\(events[$0]!)" }.joined(separator: ",")
        emit(
            LogRecord(
                .warning, .eventsRefused, "refused events outside the peer's write scopes",
                [
                    ("cause", "peer_scope"), ("conn", "\(id)"), ("peer", sessions[id]?.peer?.replicaID ?? "?"),
                    ("events", "\(total)"),
                    ("feeds", feeds),
                ]))
    }
}
