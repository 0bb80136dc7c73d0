import PeerNet
import SyncProtocol

/// One TCP connection as the event loop keeps it: its socket, where it is
/// in its life, the bytes waiting to be written and the frames read so
/// far. Used on the loop thread only; `GossipService` drives it.
final class PeerConnection {
    enum Phase {
        /// A dial in progress, until the socket is writable.
        case connecting(deadline: EventLoop.TimerID)
        /// Authenticating: the handshake (made when the first frame
        /// arrives, for an accepted connection) and the deadline that cuts it.
        case handshaking(Handshake?, deadline: EventLoop.TimerID)
        /// Keys agreed: sealed messages through the codec.
        case established(ConnectionCodec)
        /// Writing what is left, then draining the peer until it closes.
        case closing
    }

    let id: ConnectionID
    let socket: Socket
    /// The address we dialed, or `nil` for an accepted connection.
    let dialed: PeerAddress?
    let remoteHost: String
    var phase: Phase
    var decoder: FrameDecoder
    /// Counted among the pending handshakes until it is established or closed.
    var countedAsPending: Bool
    private var outbound: [[UInt8]] = []
    private var outboundOffset = 0
    private(set) var bytesReceived = 0
    private(set) var bytesSent = 0
    /// Frames handed to the codec and not delivered yet; reading pauses
    /// while too many wait, so a fast sender cannot queue without bound.
    var framesInCodec = 0
    /// Messages handed to the codec to seal and not written yet.
    var sealsInCodec = 0
    var readingPaused = false
    /// Set once a close was asked for: the reason, for the log.
    var closeReason: String?

    init(id: ConnectionID, socket: Socket, dialed: PeerAddress?, phase: Phase, preHandshakeFrameLimit: Int) {
        self.id = id
        self.socket = socket
        self.dialed = dialed
        self.remoteHost = socket.remoteHost ?? dialed?.host ?? "?"
        self.phase = phase
        self.decoder = FrameDecoder(maximumSize: preHandshakeFrameLimit)
        self.countedAsPending = dialed == nil
    }

    var isEstablished: Bool {
        if case .established = phase { return true }
        return false
    }

    var hasOutbound: Bool { !outbound.isEmpty }

    /// Nothing of this connection waits in its codec's queue: a small
    /// message may be sealed or opened on the loop (`ConnectionCodec.sealNow`).
    var codecIsIdle: Bool { framesInCodec == 0 && sealsInCodec == 0 }

    /// Queues bytes to write.
    func enqueue(_ bytes: [UInt8]) {
        outbound.append(bytes)
    }

    /// Writes what the kernel takes now; true when nothing is left.
    func writeOutbound() throws -> Bool {
        while let first = outbound.first {
            let written = try first.withUnsafeBytes { bytes in
                try socket.sendAvailable(UnsafeRawBufferPointer(rebasing: bytes[outboundOffset...]))
            }
            guard let written else { return false }
            bytesSent += written
            outboundOffset += written
            if outboundOffset == first.count {
                outbound.removeFirst()
                outboundOffset = 0
            }
        }
        return true
    }

    /// Reads what has arrived into the decoder: false at the end of the stream.
    func readAvailable(into buffer: UnsafeMutableRawBufferPointer) throws -> Bool {
        while let count = try socket.receiveAvailable(into: buffer) {
            if count == 0 { return false }
            bytesReceived += count
            decoder.append(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
            if count < buffer.count { return true }
        }
        return true
    }
}
