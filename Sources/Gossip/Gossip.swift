/// Anti-entropy sync between replicas over encrypted TCP.
///
/// The layers, from the wire up: `Wire` (frames and message encoding),
/// `Security` (handshake and sealed frames), `Session` (the pure sync state
/// machine), `Peers` (the pure peer manager), `Transport` (sockets and the
/// node that carries out directives). `docs/protocol.md` specifies the
/// protocol.
public enum Gossip {
    /// The sync protocol version a handshake carries.
    public static let protocolVersion: UInt16 = 1
}
