/// Finding peers on the local network with mDNS/DNS-SD through Avahi.
///
/// ``MDNSDiscovery`` publishes this replica as a `_peersync._tcp` service
/// and browses for the others of the same cluster; it reports them as
/// ``DiscoveryEvent``s. Static peers and peers learned from connected peers
/// are the daemon's business: they keep working when mDNS does not.
public enum Discovery {
    /// The DNS-SD service type replicas publish and browse.
    public static let serviceType = "_peersync._tcp"
}
