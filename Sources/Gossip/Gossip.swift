/// Anti-entropy sync between replicas over encrypted TCP.
///
/// This module is reserved for the Gossip work (issue 3): wire format,
/// handshake, the sync session state machine and the peer manager. Today it
/// only names the protocol version so that the module layout of
/// ARCHITECTURE.md is in place.
public enum Gossip {
    /// The sync protocol version a hello will carry.
    public static let protocolVersion = 1
}
