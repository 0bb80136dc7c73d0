import PeerNet

/// A replica of this cluster that mDNS found and resolved.
public struct DiscoveredPeer: Hashable, Sendable {
    /// The DNS-SD service instance name, e.g. `peerd-3f09a1c2` or `peerd-3f09a1c2 #2`.
    public var serviceName: String
    /// The peer's replica id, from TXT `id`.
    public var replicaID: String
    /// Where to dial it: the resolved IPv4 address and the service's port.
    public var address: PeerAddress
    /// `peer` or `relay`, from TXT `role`.
    public var role: ServiceRole
    /// The protocol version it speaks, from TXT `v` (equal to this node's).
    public var protocolVersion: UInt16

    public init(
        serviceName: String, replicaID: String, address: PeerAddress, role: ServiceRole, protocolVersion: UInt16
    ) {
        self.serviceName = serviceName
        self.replicaID = replicaID
        self.address = address
        self.role = role
        self.protocolVersion = protocolVersion
    }
}

/// What ``MDNSDiscovery`` reports.
///
/// `found` and `lost` are hints for the peer manager, never liveness:
///
/// ```swift
/// switch event {
/// case .found(let peer): peers.addPeer(peer.address, source: .discovered, now: now)
/// case .lost(let peer): peers.removePeer(peer.address)  // stops redialing; a live connection stays
/// case .warning(let text), .info(let text): log(text)
/// }
/// ```
///
/// A crashed host's record lingers in other hosts' caches for many minutes
/// and a `lost` may never come: a peer is gone when dialing it or its
/// keepalive fails.
public enum DiscoveryEvent: Hashable, Sendable, CustomStringConvertible {
    /// A service of this cluster and protocol version, not this replica's,
    /// was resolved; also when a known service moved to another address.
    case found(DiscoveredPeer)
    /// A service reported earlier by `found` was withdrawn (or moved:
    /// `lost` of the old address comes before `found` of the new one).
    case lost(DiscoveredPeer)
    /// Something an operator should see once: mDNS is unavailable, a
    /// service cannot be published, a peer speaks another protocol version.
    case warning(String)
    /// Progress worth a log line: published, renamed, reconnected, a
    /// service of another cluster ignored.
    case info(String)

    /// One line: `found id=ID addr=HOST:PORT role=ROLE v=V name=NAME`,
    /// `lost id=ID addr=HOST:PORT name=NAME`, `warning TEXT` or `info TEXT`.
    /// The name comes last because it may contain spaces.
    public var description: String {
        switch self {
        case .found(let peer):
            "found id=\(peer.replicaID) addr=\(peer.address) role=\(peer.role) v=\(peer.protocolVersion)"
                + " name=\(peer.serviceName)"
        case .lost(let peer): "lost id=\(peer.replicaID) addr=\(peer.address) name=\(peer.serviceName)"
        case .warning(let text): "warning \(text)"
        case .info(let text): "info \(text)"
        }
    }
}
