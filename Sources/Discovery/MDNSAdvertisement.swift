/// What this replica publishes over mDNS: an instance of ``Discovery/serviceType``
/// on the gossip port, with a TXT record that lets others recognise it.
///
/// ```swift
/// let advertisement = MDNSAdvertisement(
///     replicaID: log.replicaID, port: 4100, clusterFingerprint: clusterKey.fingerprint,
///     protocolVersion: WireProtocol.version)
/// advertisement.txtRecord  // ["id=…", "v=1", "role=peer", "cluster=3f09a1c2"]
/// ```
public struct MDNSAdvertisement: Hashable, Sendable {
    /// The service instance name, a DNS label of at most 63 bytes. Avahi
    /// renames it (`NAME #2`, …) when another host already uses it.
    public var instanceName: String
    /// The port the gossip service listens on.
    public var port: UInt16
    /// This replica's id (TXT `id`): how others, and this node itself, tell
    /// the service apart from other replicas'.
    public var replicaID: String
    /// The sync protocol version this node speaks (TXT `v`).
    public var protocolVersion: UInt16
    /// Whether this node only syncs for itself or serves as a hub (TXT `role`).
    public var role: ServiceRole
    /// The cluster key's public fingerprint (TXT `cluster`), never the key.
    public var clusterFingerprint: String

    /// - Parameters:
    ///   - clusterFingerprint: the cluster key's public fingerprint, never the key.
    ///   - protocolVersion: the sync protocol version this node speaks.
    ///   - instanceName: defaults to `peerd-` and the first 8 characters of
    ///     the replica id.
    public init(
        replicaID: String, port: UInt16, clusterFingerprint: String, role: ServiceRole = .peer,
        protocolVersion: UInt16, instanceName: String? = nil
    ) {
        self.instanceName = instanceName ?? Self.defaultInstanceName(replicaID: replicaID)
        self.port = port
        self.replicaID = replicaID
        self.protocolVersion = protocolVersion
        self.role = role
        self.clusterFingerprint = clusterFingerprint
    }

    /// `peerd-` and the first 8 characters of `replicaID`.
    public static func defaultInstanceName(replicaID: String) -> String {
        "peerd-" + replicaID.prefix(8)
    }

    /// The TXT record strings, in this order: `id`, `v`, `role`, `cluster`.
    public var txtRecord: [String] {
        [
            "\(ServiceTXT.Key.replicaID)=\(replicaID)",
            "\(ServiceTXT.Key.protocolVersion)=\(protocolVersion)",
            "\(ServiceTXT.Key.role)=\(role)",
            "\(ServiceTXT.Key.cluster)=\(clusterFingerprint)",
        ]
    }

    /// Why this advertisement cannot be published as it is, or `nil`.
    ///
    /// DNS-SD limits a TXT string to 255 bytes and an instance name to 63.
    public var problem: String? {
        if instanceName.utf8.isEmpty || instanceName.utf8.count > 63 {
            return "the instance name must be 1 to 63 bytes, not \(instanceName.utf8.count)"
        }
        if let long = txtRecord.first(where: { $0.utf8.count > 255 }) {
            return "the TXT string \(long.prefix(20))… is longer than 255 bytes"
        }
        return nil
    }
}
