import PeerNet
import Replica

/// Which peers to dial, when, and which connections to keep, as a pure state
/// machine: inputs carry the time, directives say what the shell does.
///
/// - One connection per peer pair: when two connections to one replica are
///   identified (both dialed at once), both ends keep the one dialed by the
///   replica whose id sorts first.
/// - A failed or lost peer is redialed after 1 s, 2 s, 5 s, 10 s, then every
///   30 s; success resets the schedule. An address known to be a relay is
///   redialed after at most `relayBackoffCapMs` (2 s), and at once when
///   discovery announces it again: replicas in the hub come back to a
///   restarted relay within seconds.
/// - A connection silent for `deadAfterMs` is closed (the session's cursor
///   exchange every second is the keepalive).
/// - At most `maxConnections` connections, of which at most `maxOutbound`
///   dialed by us; with more peers than that, a random subset is dialed and
///   one outbound connection rotates every `rotateEveryMs`.
/// - In the hub topology only relays are dialed, and outbound connections to
///   other peers are closed; accepted ones stay (see `PeerManager+Topology`).
public struct PeerManager: Sendable {
    public struct Configuration: Sendable {
        public var backoffMs: [Milliseconds] = [1_000, 2_000, 5_000, 10_000, 30_000]
        /// The longest backoff of an address known to be a relay: the hub's
        /// replicas dial nothing else, so a relay that is back is dialed
        /// again within this long.
        public var relayBackoffCapMs: Milliseconds = 2_000
        public var deadAfterMs: Milliseconds = 6_000
        /// Open connections at most (accepted and dialed); one more is
        /// closed as soon as it is up. `peerd run --max-connections` sets
        /// it (a relay's default is larger: docs/relay.md).
        public var maxConnections = 64
        public var maxOutbound = 16
        /// Close the oldest outbound connection this often when peers wait
        /// for a turn (`nil`: never).
        public var rotateEveryMs: Milliseconds? = 60_000
        /// Whether relays get a special place (`TopologyMode`).
        public var topology = TopologyMode.auto
        /// In `auto`, how long a replica keeps to the hub after its last
        /// relay connection closed before it falls back to the mesh.
        public var relayFallbackMs: Milliseconds = 3_000

        public init() {}
    }

    public enum Directive: Hashable, Sendable {
        case dial(PeerAddress)
        case close(ConnectionID, reason: String)
    }

    /// What the manager knows of one address.
    public struct Target: Hashable, Sendable {
        public var address: PeerAddress
        public var source: PeerSource
        /// The replica behind the address, once a connection said.
        public var replicaID: String?
        /// `peer` or `relay`, once discovery or a hello said.
        public var role: NodeRole?
        public var state: TargetState
        public var failures = 0
        public var nextDialAt: Milliseconds
        public var lastError: String?
    }

    public enum TargetState: Hashable, Sendable {
        case waiting
        case dialing
        case connected(ConnectionID)
        /// The address is this node itself, or was withdrawn.
        case retired

        /// The connection, while connected.
        public var connection: ConnectionID? {
            if case .connected(let id) = self { id } else { nil }
        }
    }

    /// One open connection.
    public struct Connection: Hashable, Sendable {
        public var id: ConnectionID
        /// The address we dialed; `nil` for an accepted connection.
        public var dialed: PeerAddress?
        public var replicaID: String?
        /// The peer's role, from its hello.
        public var role: NodeRole?
        public var openedAt: Milliseconds
        public var lastHeardAt: Milliseconds
        /// A close was asked for; the shell has not said it is gone yet.
        public var closing = false
        /// The session was refused before it synced: its redial backs off as after a failed dial.
        public var refused = false
    }

    public let configuration: Configuration
    public let replicaID: String
    /// This node's own role: a relay is the hub and never falls back.
    public let role: NodeRole
    /// Mesh or hub, and whether a fallback is pending.
    public internal(set) var hubState: HubState
    public private(set) var targets: [PeerAddress: Target] = [:]
    public internal(set) var connections: [ConnectionID: Connection] = [:]
    private var random: SplitMix64
    var lastRotationAt: Milliseconds = 0
    /// `nextDeadline`'s parts that take a pass over every connection and
    /// address, kept current by each input (`PeerManager+Deadlines`).
    var deadlines = DeadlineCache()

    public init(
        replicaID: String, role: NodeRole = .peer, configuration: Configuration = Configuration(), seed: UInt64 = 0
    ) {
        self.replicaID = replicaID
        self.role = role
        self.hubState =
            configuration.topology == .mesh || (configuration.topology == .auto && role == .peer) ? .mesh : .hub
        self.configuration = configuration
        self.random = SplitMix64(seed: seed)
    }

    /// Learns an address (and, when a peer or discovery told us, whose it
    /// is and its role); it is dialed at the next `tick` unless that replica
    /// is already connected or the hub topology leaves it out. Discovery
    /// announcing a relay that waits out a backoff makes it due at once.
    public mutating func addPeer(
        _ address: PeerAddress, source: PeerSource, replicaID peerID: String? = nil, role peerRole: NodeRole? = nil,
        now: Milliseconds
    ) {
        defer { refreshDeadlines() }
        learn(address, source: source, replicaID: peerID, role: peerRole, now: now)
    }

    /// `addPeer` for every address a peer exchange brought, with the
    /// deadlines worked out once (they walk every known address: once per
    /// address made a thousand-replica exchange cost a million steps).
    public mutating func addPeers(_ adverts: [PeerAdvert], source: PeerSource, now: Milliseconds) {
        guard !adverts.isEmpty else { return }
        defer { refreshDeadlines() }
        for advert in adverts {
            learn(advert.address, source: source, replicaID: advert.replicaID, role: advert.role, now: now)
        }
    }

    private mutating func learn(
        _ address: PeerAddress, source: PeerSource, replicaID peerID: String?, role peerRole: NodeRole?,
        now: Milliseconds
    ) {
        if var target = targets[address] {
            if let peerRole { target.role = peerRole }
            if source == .discovered, target.role == .relay, target.state == .waiting {
                // mDNS announces a relay again: it is (re)started, so dial it now rather than after the backoff.
                target.nextDialAt = min(target.nextDialAt, now)
            }
            if let peerID, target.state.connection == nil {
                // The address now leads to this replica (a device re-initialised, or a new one on the same IP).
                target.replicaID = peerID
            }
            if target.state == .retired && target.replicaID != replicaID {
                target.state = .waiting
                target.nextDialAt = now
            }
            targets[address] = target
            return
        }
        targets[address] = Target(
            address: address, source: source, replicaID: peerID, role: peerRole, state: .waiting, nextDialAt: now)
    }

    /// Stops dialing an address (mDNS withdrew it); an open connection stays
    /// until it fails by itself.
    public mutating func removePeer(_ address: PeerAddress) {
        defer { refreshDeadlines() }
        guard var target = targets[address] else { return }
        if case .connected = target.state { return }
        target.state = .retired
        targets[address] = target
    }

    public mutating func dialFailed(_ address: PeerAddress, reason: String, now: Milliseconds) {
        defer { refreshDeadlines() }
        guard var target = targets[address], target.state == .dialing else { return }
        target.lastError = reason
        scheduleRedial(&target, now: now)
        targets[address] = target
    }

    /// The connection's session ended before it synced, for `reason`: the
    /// dialed address's `lastError` says so.
    public mutating func noteRefusal(_ id: ConnectionID, reason: String) {
        connections[id]?.refused = true
        guard let dialed = connections[id]?.dialed else { return }
        targets[dialed]?.lastError = reason
    }

    /// A TCP connection is up (accepted, or dialed to `dialed`).
    public mutating func connected(
        _ id: ConnectionID, dialed: PeerAddress?, now: Milliseconds
    ) -> [Directive] {
        defer { refreshDeadlines() }
        connections[id] = Connection(id: id, dialed: dialed, openedAt: now, lastHeardAt: now)
        if let dialed, var target = targets[dialed] {
            target.state = .connected(id)
            targets[dialed] = target
        }
        if connections.count > configuration.maxConnections {
            connections[id]?.closing = true
            return [.close(id, reason: "too many connections (\(configuration.maxConnections))")]
        }
        return []
    }

    /// The peer's hello arrived: resolves duplicate connections, and
    /// applies the topology (a relay's hello may start the hub).
    public mutating func identified(
        _ id: ConnectionID, replicaID peerID: String, role peerRole: NodeRole = .peer, now: Milliseconds
    ) -> [Directive] {
        defer { refreshDeadlines() }
        guard var connection = connections[id] else { return [] }
        connection.replicaID = peerID
        connection.role = peerRole
        connection.lastHeardAt = now
        connections[id] = connection
        if let dialed = connection.dialed, var target = targets[dialed] {
            target.replicaID = peerID
            target.lastError = nil
            targets[dialed] = target
        }
        for (address, target) in targets where target.replicaID == peerID {
            targets[address]?.role = peerRole
        }
        if peerID == replicaID {
            if let dialed = connection.dialed { targets[dialed]?.state = .retired }
            connections[id]?.closing = true
            return [.close(id, reason: "this address is this node itself")]
        }
        let twins = connections.values.filter { $0.replicaID == peerID && $0.id != id && !$0.closing }
        var directives: [Directive] = []
        if let twin = twins.first {
            let loser = preferred(connection, twin).id == id ? twin.id : id
            connections[loser]?.closing = true
            directives.append(.close(loser, reason: "duplicate connection to \(peerID)"))
        }
        if peerRole == .relay { relayIdentified() }
        return directives + closeOutsideHub()
    }

    /// Any message arrived on the connection.
    /// Costs no pass over the connections unless this one was the next to go
    /// silent: a relay hears every replica's cursor and acks.
    public mutating func heard(_ id: ConnectionID, now: Milliseconds) {
        connections[id]?.lastHeardAt = now
        if deadlines.silentID == id { refreshDeadlines() }
    }

    /// The connection is gone; its address is redialed after a backoff.
    public mutating func disconnected(_ id: ConnectionID, now: Milliseconds) {
        defer { refreshDeadlines() }
        guard let connection = connections.removeValue(forKey: id) else { return }
        if connection.role == .relay { relayDisconnected(now: now) }
        for (address, var target) in targets {
            if target.state == .connected(id) {
                target.failures = connection.replicaID == nil || connection.refused ? target.failures : 0
                scheduleRedial(&target, now: now)
            } else if target.state == .waiting, let peerID = connection.replicaID, target.replicaID == peerID {
                // Other addresses of the replica that just left wait a backoff too.
                target.nextDialAt = max(target.nextDialAt, now + backoff(afterFailures: 1, role: target.role))
            } else {
                continue
            }
            targets[address] = target
        }
    }

    /// Closes silent connections, rotates, and dials addresses whose time came.
    public mutating func tick(now: Milliseconds) -> [Directive] {
        defer { refreshDeadlines() }
        fallBackIfDue(now: now)
        var directives: [Directive] = []
        for connection in connections.values.sorted(by: { $0.id < $1.id })
        where !connection.closing && now - connection.lastHeardAt > configuration.deadAfterMs {
            connections[connection.id]?.closing = true
            directives.append(.close(connection.id, reason: "peer silent for \(now - connection.lastHeardAt) ms"))
        }
        let connectedReplicas = Set(connections.values.compactMap(\.replicaID))
        var due = targets.values.filter { target in
            target.state == .waiting && target.nextDialAt <= now
                && !(target.replicaID.map(connectedReplicas.contains) ?? false) && isDialable(target)
        }.sorted { $0.address < $1.address }
        due.shuffle(using: &random)
        var outbound = connections.values.filter { $0.dialed != nil }.count
        outbound += targets.values.filter { $0.state == .dialing }.count
        if let rotateEvery = configuration.rotateEveryMs, !due.isEmpty, outbound >= configuration.maxOutbound,
            now - lastRotationAt >= rotateEvery,
            let oldest = connections.values.filter({ $0.dialed != nil && !$0.closing }).min(by: {
                ($0.openedAt, $0.id) < ($1.openedAt, $1.id)
            })
        {
            lastRotationAt = now
            connections[oldest.id]?.closing = true
            directives.append(.close(oldest.id, reason: "rotating to another peer"))
        }
        for target in due where outbound < configuration.maxOutbound && connections.count < configuration.maxConnections
        {
            targets[target.address]?.state = .dialing
            outbound += 1
            directives.append(.dial(target.address))
        }
        return directives
    }

    /// Of two connections to one replica, the one both ends keep: the one
    /// dialed by the replica whose id sorts first (the older one on a tie).
    private func preferred(_ a: Connection, _ b: Connection) -> Connection {
        let weDialFirst = replicaID.utf8.lexicographicallyPrecedes((a.replicaID ?? "").utf8)
        let aWins = (a.dialed != nil) == weDialFirst
        let bWins = (b.dialed != nil) == weDialFirst
        if aWins != bWins { return aWins ? a : b }
        return a.id < b.id ? a : b
    }

    private func backoff(afterFailures failures: Int, role: NodeRole? = nil) -> Milliseconds {
        let step = configuration.backoffMs[min(max(failures - 1, 0), configuration.backoffMs.count - 1)]
        return role == .relay ? min(step, configuration.relayBackoffCapMs) : step
    }

    private func scheduleRedial(_ target: inout Target, now: Milliseconds) {
        target.failures += 1
        target.state = .waiting
        target.nextDialAt = now + backoff(afterFailures: target.failures, role: target.role)
    }
}
