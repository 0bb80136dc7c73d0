import Foundation
import Gossip
import Replica
import SyncProtocol

/// `GET /metrics`: Prometheus text format 0.0.4 (docs/operations.md says
/// what each metric means).
extension DaemonAPI {
    func metricsText() throws -> HTTPResponse {
        let sync = service.metrics()
        let daemon = metrics.snapshot
        let replica = try reads.read { log in
            (
                events: try log.eventCount(), feeds: try log.cursor().feeds.count, forks: try log.forkCount(),
                poison: try log.poisonEventCount()
            )
        }
        let rows = service.peerTable()
        var text = PrometheusText()
        text.counter("peersync_events_appended_total", "Events appended on this node through the API.", daemon.appended)
        text.counter("peersync_events_ingested_total", "Events from peers stored on this node.", sync.eventsIngested)
        text.counter(
            "peersync_events_duplicate_total", "Events from peers this node already held.", sync.duplicatesIgnored)
        text.header("peersync_events_rejected_total", "Events from peers not stored, by reason.", "counter")
        text.sample("peersync_events_rejected_total", ["reason": "gap"], Double(sync.eventsRejectedGap))
        text.sample("peersync_events_rejected_total", ["reason": "invalid"], Double(sync.eventsRejectedInvalid))
        text.sample("peersync_events_rejected_total", ["reason": "fork"], Double(sync.eventsRejectedFork))
        text.sample("peersync_events_rejected_total", ["reason": "scope"], Double(sync.eventsRejectedScope))
        text.sample("peersync_events_rejected_total", ["reason": "revoked"], Double(sync.eventsRejectedRevoked))
        text.sample("peersync_events_rejected_total", ["reason": "signature"], Double(sync.eventsRejectedSignature))
        text.sample("peersync_events_rejected_total", ["reason": "forked"], Double(sync.eventsRejectedForked))
        text.gauge("peersync_events", "Events this replica holds.", Double(replica.events))
        text.gauge("peersync_feeds", "Feeds (replica and scope) this replica holds events of.", Double(replica.feeds))
        text.gauge("peersync_forks", "Fork reports stored in quarantine.", Double(replica.forks))
        text.gauge(
            "peersync_forked_feeds", "Feeds quarantined by a fork proof: neither taken nor served.",
            Double(sync.forkedFeeds))
        text.header(
            "peersync_feeds_refused",
            "Feeds refused from peers for failing verification and not held since, by reason.",
            "gauge")
        for reason in RefusalReason.codes {
            text.sample("peersync_feeds_refused", ["reason": reason], Double(sync.feedsRefused[reason] ?? 0))
        }
        text.gauge("peersync_poison_events", "Stored events whose payload no fold can decode.", Double(replica.poison))
        text.gauge("peersync_peers_connected", "Peers with an open, identified session.", Double(sync.peersConnected))
        text.gauge(
            "peersync_peers_diverged", "Connected peers with this replica's cursor but another state: a fork.",
            Double(sync.peersDiverged))
        text.gauge(
            "peersync_connections_open", "Open peer connections, handshakes included.", Double(sync.connectionsOpen))
        text.header("peersync_peers_connected_by_role", "Peers with an open, identified session, by role.", "gauge")
        for role in [NodeRole.peer, .relay] {
            let count = rows.filter { $0.state == .connected && $0.role == role }.count
            text.sample("peersync_peers_connected_by_role", ["role": role.description], Double(count))
        }
        let topology = service.topology()
        text.header("peersync_topology", "1 for the topology this node's connections take now (hub or mesh).", "gauge")
        for shape in [Topology.hub, .mesh] {
            text.sample("peersync_topology", ["mode": shape.rawValue], shape == topology ? 1 : 0)
        }
        text.counter(
            "peersync_handshake_failures_total", "Connections that ended during the handshake.", sync.handshakeFailures)
        text.gauge(
            "peersync_connections_pending", "Connections in the handshake now.", Double(sync.connectionsPending))
        text.header(
            "peersync_connections_refused_total", "Connections turned away before their session started, by reason.",
            "counter")
        for kind in RefusalKind.allCases {
            text.sample(
                "peersync_connections_refused_total", ["reason": kind.rawValue],
                Double(sync.connectionsRefused[kind.rawValue] ?? 0))
        }
        let health = storage.health
        text.gauge(
            "peersync_storage_degraded", "1 while a storage fault keeps the replica degraded, else 0.",
            health.isDegraded ? 1 : 0)
        text.counter("peersync_storage_faults_total", "Storage faults seen since the daemon started.", health.faults)
        text.counter("peersync_bytes_received_total", "Bytes received from peers.", sync.bytesReceived)
        text.counter("peersync_bytes_sent_total", "Bytes sent to peers.", sync.bytesSent)
        text.gauge(
            "peersync_sync_lag_events", "Events connected peers hold that this node lacks.", Double(sync.syncLagEvents))
        text.header("peersync_clock_skew_seconds", "Most a peer's event times were ahead of this clock.", "gauge")
        for row in rows {
            guard let replicaID = row.replicaID, let skew = row.clockSkewMs else { continue }
            text.sample("peersync_clock_skew_seconds", ["peer": replicaID], Double(skew) / 1000)
        }
        text.histogram(
            "peersync_append_latency_seconds", "Local append through the API, to durable commit.", daemon.appendLatency)
        text.histogram(
            "peersync_sync_latency_seconds", "Event time to its storage on this node, for events from peers.",
            sync.syncLatency)
        text.header("peersync_http_requests_total", "HTTP API requests answered, by status.", "counter")
        for (status, count) in daemon.requests.sorted(by: { $0.key < $1.key }) {
            text.sample("peersync_http_requests_total", ["code": String(status)], Double(count))
        }
        return .text(200, text.text, contentType: "text/plain; version=0.0.4; charset=utf-8")
    }
}

/// Builds Prometheus exposition text.
struct PrometheusText {
    private(set) var text = ""

    mutating func header(_ name: String, _ help: String, _ type: String) {
        text += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
    }

    mutating func sample(_ name: String, _ labels: [String: String], _ value: Double) {
        let labelText =
            labels.isEmpty
            ? ""
            : "{"
                + labels.sorted { $0.key < $1.key }.map { "\($0.key)=\"\(Self.escaped($0.value))\"" }.joined(
                    separator: ",") + "}"
        text += "\(name)\(labelText) \(Self.number(value))\n"
    }

    mutating func counter(_ name: String, _ help: String, _ value: Int) {
        header(name, help, "counter")
        sample(name, [:], Double(value))
    }

    mutating func gauge(_ name: String, _ help: String, _ value: Double) {
        header(name, help, "gauge")
        sample(name, [:], value)
    }

    mutating func histogram(_ name: String, _ help: String, _ histogram: LatencyHistogram) {
        header(name, help, "histogram")
        for bucket in histogram.buckets {
            let bound = bucket.upperBound.isInfinite ? "+Inf" : Self.number(bucket.upperBound)
            sample(name + "_bucket", ["le": bound], Double(bucket.count))
        }
        sample(name + "_sum", [:], histogram.sum)
        sample(name + "_count", [:], Double(histogram.count))
    }

    private static func number(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }

    private static func escaped(_ text: String) -> String {
        text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n")
    }
}
