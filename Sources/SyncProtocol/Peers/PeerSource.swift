/// How this node learned of a peer.
public enum PeerSource: String, Hashable, Sendable, CaseIterable {
    /// `--peer` on the command line or in the config.
    case configured
    /// mDNS.
    case discovered
    /// Another peer told us.
    case exchanged
}

/// Monotonic milliseconds, from whatever origin the shell picks. The peer
/// manager never reads a clock: every input carries the time.
public typealias Milliseconds = Int64

/// A connection's number, given by the shell, unique for the node's life.
public typealias ConnectionID = UInt64
