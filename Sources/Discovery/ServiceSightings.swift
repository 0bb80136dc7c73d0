/// Which `_peersync._tcp` services the browser sees, and what was reported
/// about them: turns Avahi's browse and resolve results into
/// ``DiscoveryEvent``s. Inputs in, events out; no Avahi, no clock.
///
/// A service appears once per interface and IP protocol it was seen on
/// (an *instance*). It is `found` when an instance resolves to a peer of
/// this cluster, found again only when what it says changes, and `lost`
/// when its last instance disappears. Services that are ignored (this
/// replica's own, another cluster's, another protocol version's) are said
/// once each, as `info` or `warning`.
struct ServiceSightings {
    /// One browse result: a service name on one interface and IP protocol.
    struct Instance: Hashable {
        var name: String
        var interface: Int32
        var ipProtocol: Int32
    }

    private struct Sighting {
        var instances: Set<Instance> = []
        /// What `found` last reported, until `lost`.
        var peer: DiscoveredPeer?
        /// The browse generation that last saw an instance of it.
        var generation: Int
    }

    /// This node's own advertisement, to judge others against.
    let own: MDNSAdvertisement
    private var sightings: [String: Sighting] = [:]
    private var generation = 0
    /// Notices already given, so that each is given once.
    private var noticed: Set<String> = []

    init(own: MDNSAdvertisement) {
        self.own = own
    }

    /// The peers currently reported as found, by service name.
    var peers: [String: DiscoveredPeer] { sightings.compactMapValues(\.peer) }

    /// The browser reported `instance` (Avahi's `AVAHI_BROWSER_NEW`).
    mutating func appeared(_ instance: Instance) {
        sightings[instance.name, default: Sighting(generation: generation)].instances.insert(instance)
        sightings[instance.name]?.generation = generation
    }

    /// `instance` resolved to `host` and `port` with TXT `txt`.
    mutating func resolved(_ instance: Instance, host: String, port: UInt16, txt: [String]) -> [DiscoveryEvent] {
        guard var sighting = sightings[instance.name], sighting.instances.contains(instance) else {
            return []  // it disappeared while it was being resolved
        }
        let verdict = ServiceVerdict.judge(
            serviceName: instance.name, host: host, port: port, txt: ServiceTXT(txt), own: own)
        var events: [DiscoveryEvent] = []
        if case .peer(let peer) = verdict {
            if sighting.peer != peer {
                if let old = sighting.peer, old.address != peer.address { events.append(.lost(old)) }
                events.append(.found(peer))
                sighting.peer = peer
            }
        } else {
            if let old = sighting.peer { events.append(.lost(old)) }
            sighting.peer = nil
            events += notice(for: verdict, serviceName: instance.name, host: host)
        }
        sightings[instance.name] = sighting
        return events
    }

    /// The browser withdrew `instance` (Avahi's `AVAHI_BROWSER_REMOVE`).
    mutating func disappeared(_ instance: Instance) -> [DiscoveryEvent] {
        guard var sighting = sightings[instance.name] else { return [] }
        sighting.instances.remove(instance)
        guard sighting.instances.isEmpty else {
            sightings[instance.name] = sighting
            return []
        }
        sightings[instance.name] = nil
        return sighting.peer.map { [.lost($0)] } ?? []
    }

    /// A new browser replaces one that went away with its client (the
    /// daemon restarted): every instance is forgotten, and what the new
    /// browser has not seen again by ``allForNow()`` is lost then.
    mutating func browsingRestarted() {
        generation += 1
        for name in sightings.keys { sightings[name]?.instances = [] }
        sightings = sightings.filter { $0.value.peer != nil }
    }

    /// The browser has reported everything it knows for now (Avahi's
    /// `AVAHI_BROWSER_ALL_FOR_NOW`): services not seen since the last
    /// ``browsingRestarted()`` are lost.
    mutating func allForNow() -> [DiscoveryEvent] {
        let stale = sightings.filter { $0.value.generation < generation && $0.value.instances.isEmpty }
        var events: [DiscoveryEvent] = []
        for (name, sighting) in stale.sorted(by: { $0.key < $1.key }) {
            sightings[name] = nil
            if let peer = sighting.peer { events.append(.lost(peer)) }
        }
        return events
    }

    private mutating func notice(for verdict: ServiceVerdict, serviceName: String, host: String) -> [DiscoveryEvent] {
        let key: String
        let event: DiscoveryEvent
        switch verdict {
        case .peer, .ownService:
            return []
        case .otherCluster(let fingerprint):
            key = "cluster \(fingerprint)"
            event = .info(
                "ignoring services of cluster '\(fingerprint)' (this node's is '\(own.clusterFingerprint)'),"
                    + " first '\(serviceName)' at \(host)")
        case .incompatibleVersion(let version):
            key = "version \(serviceName) \(version)"
            event = .warning(
                "ignoring '\(serviceName)' at \(host): it speaks protocol version '\(version)',"
                    + " this node speaks \(own.protocolVersion); upgrade the older one")
        case .malformed(let reason):
            key = "malformed \(serviceName) \(reason)"
            event = .info("ignoring '\(serviceName)' at \(host): \(reason)")
        }
        return noticed.insert(key).inserted ? [event] : []
    }
}
