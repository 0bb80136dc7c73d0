/// Finding peers: Avahi mDNS, static peers and peer exchange.
///
/// This module is reserved for the Discovery work (issue 4). Today it only
/// names the mDNS service type so that the module layout of ARCHITECTURE.md
/// is in place.
public enum Discovery {
    /// The DNS-SD service type replicas publish and browse.
    public static let serviceType = "_peersync._tcp"
}
