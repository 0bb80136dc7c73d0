import PeerNet

/// What to make of a resolved `_peersync._tcp` service: a peer to report,
/// or why it is ignored. A pure function of the service and this node's
/// own advertisement.
enum ServiceVerdict: Hashable, Sendable {
    /// A replica of this cluster, speaking this node's protocol version.
    case peer(DiscoveredPeer)
    /// This replica's own service (TXT `id` is this replica's id), from this
    /// process or another one with the same replica.
    case ownService
    /// A replica of another cluster, by its fingerprint.
    case otherCluster(fingerprint: String)
    /// A replica of this cluster that speaks another protocol version (TXT `v`).
    case incompatibleVersion(String)
    /// Not a PeerSync service as this version understands it.
    case malformed(reason: String)

    /// Judges a resolved service.
    ///
    /// The checks run in this order: a TXT `id` at all, this replica's own
    /// id, the cluster fingerprint, the protocol version, the role, the port.
    static func judge(
        serviceName: String, host: String, port: UInt16, txt: ServiceTXT, own: MDNSAdvertisement
    ) -> ServiceVerdict {
        guard let replicaID = txt[ServiceTXT.Key.replicaID], !replicaID.isEmpty else {
            return .malformed(reason: "no TXT id")
        }
        if replicaID == own.replicaID { return .ownService }
        let cluster = txt[ServiceTXT.Key.cluster] ?? ""
        guard cluster == own.clusterFingerprint else { return .otherCluster(fingerprint: cluster) }
        let versionText = txt[ServiceTXT.Key.protocolVersion] ?? ""
        guard let version = UInt16(versionText), version == own.protocolVersion else {
            return .incompatibleVersion(versionText)
        }
        let roleText = txt[ServiceTXT.Key.role] ?? ""
        guard let role = ServiceRole(text: roleText) else { return .malformed(reason: "unknown role '\(roleText)'") }
        guard port != 0 else { return .malformed(reason: "port 0") }
        return .peer(
            DiscoveredPeer(
                serviceName: serviceName, replicaID: replicaID, address: PeerAddress(host: host, port: port),
                role: role, protocolVersion: version))
    }
}
