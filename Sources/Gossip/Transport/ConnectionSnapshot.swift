import PeerNet
import SyncProtocol

/// One connection as the service sees it at a moment: who, where, how much
/// traffic, and how far apart the two replicas are.
public struct ConnectionSnapshot: Sendable, Hashable {
    public var id: ConnectionID
    /// The peer's hello, once it arrived.
    public var peer: Hello?
    public var remoteHost: String
    /// The address we dialed; `nil` for an accepted connection.
    public var dialed: PeerAddress?
    public var bytesReceived: Int
    public var bytesSent: Int
    /// Events the peer holds that we lack, from the two cursors.
    public var eventsToReceive: UInt64
    /// Events we hold that the peer lacks.
    public var eventsToSend: UInt64
}
