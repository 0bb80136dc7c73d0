import Gossip
import SyncProtocol

/// One incarnation of one replica: a restart is a new host, so that
/// anything addressed to the crashed process is dropped.
public struct Host: Hashable, Sendable, CustomStringConvertible {
    public var replica: Int
    public var incarnation: Int

    public var description: String { "sim-\(replica)#\(incarnation)" }
}

/// A message on its way from one end of a link to the other.
struct Transmission {
    /// The receiving end.
    var to: ConnectionID
    /// The sending end's record counter, as the sealed channel implies it.
    var sequence: UInt64
    var message: Message
    var arrivesAt: Milliseconds
}

/// In-memory links between replicas that behave like TCP under the sealed
/// channel: every record carries an implicit counter, so a receiver that
/// sees anything but the next record (one was lost, duplicated or overtaken)
/// drops the connection, as the real transport does when decryption fails.
///
/// The network itself does not keep order: each message gets its own delay,
/// and delays may cross. Partitions drop what crosses them, closes
/// included; a host that crashed answers nothing until it restarts, and a
/// running host answers data for a connection it no longer has with a reset.
struct VirtualNetwork {
    /// One end of a link.
    struct Endpoint {
        var owner: Host
        var peer: ConnectionID
        /// One-way latency of this direction, fixed for the link's life.
        var latencyMs: Milliseconds
        var nextSendSequence: UInt64 = 0
        var nextExpectedSequence: UInt64 = 0
        var open = true
        /// When the last message sent from this end arrives (a close goes after it).
        var lastArrivalAt: Milliseconds = 0
        /// This direction's feed table, for counting bytes as the wire would.
        var encoder = MessageEncoder()
        /// Whether the link joins two sites (`SiteLayout`).
        var crossesSites = false
        /// When this direction's last message has left the sender, on a
        /// link of limited bandwidth (fractions of a millisecond count).
        var wireFreeAt = 0.0
    }

    /// What the receiving end makes of a transmission.
    enum Reception {
        case deliver(Host, Message)
        /// The record was not the next one: the receiver's channel fails.
        case broken(Host)
        /// The receiving host restarted since: the sender's end is reset.
        case reset(ConnectionID)
        case ignored
    }

    var conditions: NetworkConditions
    /// Whether `send` counts `NetworkStatistics.bytesSent`.
    var countsBytes = false
    /// The Poly1305 tag each sealed frame carries after its ciphertext.
    static let sealTagBytes = 16
    var statistics = NetworkStatistics()
    /// Replicas in sites: link latencies and bandwidth by whether a link
    /// crosses sites, and traffic counted by that class.
    var sites: SiteLayout?
    /// Node pairs (lower index in the high half) whose link carried a
    /// message since `forgetLinksUsed`.
    private var linksUsed: Set<Int> = []
    private(set) var endpoints: [ConnectionID: Endpoint] = [:]
    /// Partition group per replica; one group when healed.
    private(set) var groups: [Int]
    /// The running incarnation per replica, nil while crashed.
    private var running: [Int?]
    private var nextConnectionID: ConnectionID = 1

    init(replicaCount: Int, conditions: NetworkConditions) {
        self.conditions = conditions
        groups = Array(repeating: 0, count: replicaCount)
        running = Array(repeating: nil, count: replicaCount)
    }

    func isUp(_ host: Host) -> Bool { running[host.replica] == host.incarnation }

    /// Links cut for the whole run (`ScheduledFault.Action.cutLink`), lower replica first.
    private var cutLinks: Set<[Int]> = []

    func reachable(_ a: Int, _ b: Int) -> Bool {
        groups[a] == groups[b] && (cutLinks.isEmpty || !cutLinks.contains([min(a, b), max(a, b)]))
    }

    mutating func cut(_ a: Int, _ b: Int) {
        cutLinks.insert([min(a, b), max(a, b)])
    }

    var isPartitioned: Bool { Set(groups).count > 1 }

    mutating func partition(_ groups: [Int]) {
        precondition(groups.count == self.groups.count, "a partition names a group for every replica")
        self.groups = groups
    }

    mutating func heal() {
        groups = Array(repeating: 0, count: groups.count)
    }

    mutating func hostStarted(_ host: Host) {
        running[host.replica] = host.incarnation
    }

    /// The host is gone without a word: its ends close silently.
    mutating func hostCrashed(_ host: Host) {
        running[host.replica] = nil
        for id in endpoints.keys.sorted() where endpoints[id]!.owner == host {
            endpoints[id]!.open = false
        }
    }

    /// Links two hosts; returns the dialer's and the acceptor's connection ids.
    mutating func connect(dialer: Host, acceptor: Host, random: inout SimulationRandom) -> (ConnectionID, ConnectionID)
    {
        let outbound = nextConnectionID
        let inbound = nextConnectionID + 1
        nextConnectionID += 2
        let crossesSites = sites?.isWAN(dialer.replica, acceptor.replica) ?? false
        let latency = random.int(
            in: sites.map { crossesSites ? $0.wanLatencyMs : $0.lanLatencyMs } ?? conditions.latencyMs)
        endpoints[outbound] = Endpoint(
            owner: dialer, peer: inbound, latencyMs: latency, crossesSites: crossesSites)
        endpoints[inbound] = Endpoint(
            owner: acceptor, peer: outbound, latencyMs: latency, crossesSites: crossesSites)
        statistics.connectionsOpened += 1
        return (outbound, inbound)
    }

    /// The owner of an open end.
    func openOwner(_ id: ConnectionID) -> Host? {
        guard let endpoint = endpoints[id], endpoint.open else { return nil }
        return endpoint.owner
    }

    /// Sends one record from end `id`; returns the copies that will arrive.
    mutating func send(
        _ message: Message, on id: ConnectionID, now: Milliseconds, random: inout SimulationRandom
    ) -> [Transmission] {
        guard var endpoint = endpoints[id], endpoint.open, let far = endpoints[endpoint.peer] else { return [] }
        let sequence = endpoint.nextSendSequence
        endpoint.nextSendSequence += 1
        statistics.messagesSent += 1
        let bytes = countsBytes ? Frame.headerSize + endpoint.encoder.encode(message).count + Self.sealTagBytes : 0
        statistics.bytesSent += bytes
        count(bytes, from: endpoint.owner.replica, to: far.owner.replica, crossingSites: endpoint.crossesSites)
        defer { endpoints[id] = endpoint }
        guard reachable(endpoint.owner.replica, far.owner.replica) else {
            statistics.partitionDrops += 1
            return []
        }
        if random.chance(conditions.dropProbability) {
            statistics.drops += 1
            return []
        }
        var arrival = now + endpoint.latencyMs
        if endpoint.crossesSites, let rate = sites?.wanBytesPerSecond {
            // The message leaves once the ones before it have, at the link's rate.
            endpoint.wireFreeAt = max(Double(now), endpoint.wireFreeAt) + Double(bytes) * 1_000 / Double(rate)
            arrival = Int64(endpoint.wireFreeAt.rounded(.up)) + endpoint.latencyMs
        }
        if random.chance(conditions.delayProbability) {
            statistics.delays += 1
            arrival += random.int(in: conditions.delayMs)
        }
        if conditions.inOrder { arrival = max(arrival, endpoint.lastArrivalAt) }
        endpoint.lastArrivalAt = max(endpoint.lastArrivalAt, arrival)
        var copies = [Transmission(to: endpoint.peer, sequence: sequence, message: message, arrivesAt: arrival)]
        if random.chance(conditions.duplicateProbability) {
            statistics.duplicates += 1
            let again = arrival + random.int(in: 0...conditions.delayMs.upperBound)
            endpoint.lastArrivalAt = max(endpoint.lastArrivalAt, again)
            copies.append(Transmission(to: endpoint.peer, sequence: sequence, message: message, arrivesAt: again))
        }
        return copies
    }

    /// Counts one message by the class of its link, and the link as used.
    private mutating func count(_ bytes: Int, from a: Int, to b: Int, crossingSites: Bool) {
        let key = min(a, b) << 32 | max(a, b)
        let isNew = linksUsed.insert(key).inserted
        if crossingSites {
            statistics.wan.bytes += bytes
            statistics.wan.messages += 1
            if isNew { statistics.wan.linksUsed += 1 }
        } else {
            statistics.lan.bytes += bytes
            statistics.lan.messages += 1
            if isNew { statistics.lan.linksUsed += 1 }
        }
    }

    /// Starts counting the links used afresh.
    mutating func forgetLinksUsed() {
        linksUsed = []
        statistics.lan.linksUsed = 0
        statistics.wan.linksUsed = 0
    }

    /// What the receiving end does with a transmission that arrived.
    mutating func receive(_ transmission: Transmission) -> Reception {
        guard var endpoint = endpoints[transmission.to], let far = endpoints[endpoint.peer] else { return .ignored }
        guard reachable(endpoint.owner.replica, far.owner.replica) else {
            statistics.partitionDrops += 1
            return .ignored
        }
        guard endpoint.open else {
            // A running host answers data for a connection it no longer has
            // (closed, or lost in a crash before a restart) with a reset.
            guard running[endpoint.owner.replica] != nil, far.open else { return .ignored }
            statistics.resets += 1
            return .reset(endpoint.peer)
        }
        guard transmission.sequence == endpoint.nextExpectedSequence else {
            statistics.channelBreaks += 1
            return .broken(endpoint.owner)
        }
        endpoint.nextExpectedSequence += 1
        endpoints[transmission.to] = endpoint
        statistics.messagesDelivered += 1
        return .deliver(endpoint.owner, transmission.message)
    }

    /// End `id` closes after what it sent; returns the far end and when it
    /// learns of the close, or nil when the end was already closed.
    mutating func close(_ id: ConnectionID, now: Milliseconds) -> (peer: ConnectionID, at: Milliseconds)? {
        guard var endpoint = endpoints[id], endpoint.open else { return nil }
        endpoint.open = false
        endpoints[id] = endpoint
        statistics.closes += 1
        return (endpoint.peer, max(now + endpoint.latencyMs, endpoint.lastArrivalAt) + 1)
    }

    /// The far end learns that its link is gone; returns its owner when the
    /// end was still open, so that the owner's node hears of it. A close lost
    /// in a partition leaves the end open: its peer manager finds it silent.
    mutating func hangUp(_ id: ConnectionID) -> Host? {
        guard var endpoint = endpoints[id], endpoint.open else { return nil }
        if let far = endpoints[endpoint.peer], !reachable(endpoint.owner.replica, far.owner.replica) {
            statistics.partitionDrops += 1
            return nil
        }
        endpoint.open = false
        endpoints[id] = endpoint
        return endpoint.owner
    }

    /// The owner of the other end of `id`'s link.
    func peerOwner(of id: ConnectionID) -> Host? {
        endpoints[id].flatMap { endpoints[$0.peer]?.owner }
    }

    /// One-way latency of the link that end `id` belongs to.
    func latency(of id: ConnectionID) -> Milliseconds { endpoints[id]?.latencyMs ?? 1 }
}
