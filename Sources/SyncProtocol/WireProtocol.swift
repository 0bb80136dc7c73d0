/// The sync protocol between replicas, as pure values and state machines:
/// `Wire` (frames and message encoding), `Security` (the handshake, cluster
/// key and sealed frames), `Session` (the sync session), `Peers` (the peer
/// manager). No sockets, clocks or threads: the shell in `Gossip` carries
/// out what they ask. `docs/protocol.md` specifies the protocol.
public enum WireProtocol {
    /// The sync protocol version a handshake carries. Version 2 added the
    /// identity section of `hello` (docs/identity.md); version 3 signed
    /// feeds: proofs in `events`, `certificates` and `fork proofs` messages;
    /// version 4 checkpoints: `checkpoint`, `checkpoint acks`, `bases wanted`
    /// and `bases` (docs/protocol.md "Checkpoints over the wire"); version 5
    /// the role of each replica in a `peers` message.
    public static let version: UInt16 = 5
}
