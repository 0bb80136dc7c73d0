import Foundation
import PeerNet
import SyncProtocol
import Synchronization

/// One TCP connection to a peer: the handshake, then sealed messages.
///
/// A dedicated thread reads (blocking `recv`), runs the handshake and opens
/// frames; a serial queue writes. What it learns goes to its `delegate`
/// callbacks, which the service hops onto its own queue.
///
/// `@unchecked Sendable`: `encoder` and `sealer` are used only from the
/// service's queue, `handshake`, `decoder` and `opener` only from the reader
/// thread; the socket is shared as `Socket` documents.
final class PeerConnection: @unchecked Sendable {
    struct Callbacks: Sendable {
        var established: @Sendable (PeerConnection) -> Void
        var received: @Sendable (PeerConnection, Message) -> Void
        var closed: @Sendable (PeerConnection, _ reason: String, _ wasEstablished: Bool) -> Void
    }

    let id: ConnectionID
    let socket: Socket
    /// The address we dialed, or `nil` for an accepted connection.
    let dialed: PeerAddress?
    let remoteHost: String
    private let writer: DispatchQueue
    private let callbacks: Callbacks
    private var handshake: Handshake
    private var opener: FrameOpener?
    private var decoder = FrameDecoder()
    private var messageDecoder = MessageDecoder()
    var encoder = MessageEncoder()
    var sealer: FrameSealer?
    private let traffic = Mutex((bytesIn: 0, bytesOut: 0))
    private let closing = Mutex<String?>(nil)

    /// How long a handshake may take before the connection is dropped.
    static let handshakeTimeoutMs = 10_000

    init(id: ConnectionID, socket: Socket, dialed: PeerAddress?, clusterKey: ClusterKey, callbacks: Callbacks) {
        self.id = id
        self.socket = socket
        self.dialed = dialed
        self.remoteHost = socket.remoteHost ?? "?"
        self.callbacks = callbacks
        self.writer = DispatchQueue(label: "peersync.connection.\(id).writer")
        self.handshake = Handshake(
            role: dialed == nil ? .responder : .initiator, clusterKey: clusterKey,
            ephemeral: Handshake.ephemeralKeyPair())
    }

    /// Bytes received and sent on the wire so far.
    var bytes: (received: Int, sent: Int) { traffic.withLock { ($0.bytesIn, $0.bytesOut) } }

    /// Starts the reader thread (and, when we dialed, the handshake).
    func start() {
        let thread = Thread { [self] in readLoop() }
        thread.name = "peersync-conn-\(id)"
        thread.start()
    }

    /// Encodes, seals and queues a message. Call from the service queue only.
    func send(_ message: Message) throws {
        guard let sealer else { return }
        let plaintext = encoder.encode(message)
        guard plaintext.count <= FrameSealer.maximumPlaintextSize else {
            throw WireError.frameTooLarge(plaintext.count, limit: FrameSealer.maximumPlaintextSize)
        }
        write(sealer.seal(plaintext))
    }

    /// Sends what is queued, then closes; the reader thread reports `closed`.
    func close(reason: String) {
        closing.withLock { if $0 == nil { $0 = reason } }
        writer.async { [socket] in socket.shutdown() }
    }

    /// Waits until every queued frame is written (or failed).
    func flush() {
        writer.sync {}
    }

    private func write(_ frame: Frame) {
        let bytes = frame.encoded()
        writer.async { [self] in
            do {
                try socket.send(bytes)
                traffic.withLock { $0.bytesOut += bytes.count }
            } catch {
                closing.withLock { if $0 == nil { $0 = "send failed: \(error)" } }
                socket.shutdown()
            }
        }
    }

    private func readLoop() {
        var established = false
        socket.setReceiveTimeout(milliseconds: PeerConnection.handshakeTimeoutMs)
        let reason: String
        do {
            if dialed != nil { established = try perform(handshake.start()) }
            reason = try receiveUntilClosed(established: &established)
        } catch {
            reason = "\(error)"
        }
        let finalReason = closing.withLock { $0 } ?? reason
        callbacks.closed(self, finalReason, established)
    }

    /// Reads frames until the stream ends; returns why it ended.
    private func receiveUntilClosed(established: inout Bool) throws -> String {
        while true {
            let bytes: [UInt8]
            do {
                bytes = try socket.receive()
            } catch let error as SocketError where error.code == EAGAIN {
                return "handshake timed out after \(PeerConnection.handshakeTimeoutMs) ms"
            }
            if bytes.isEmpty {
                if decoder.bufferedCount > 0 {
                    return "connection closed by peer in the middle of a frame (\(decoder.bufferedCount) bytes)"
                }
                return established ? "connection closed by peer" : "connection closed by peer during the handshake"
            }
            traffic.withLock { $0.bytesIn += bytes.count }
            decoder.append(bytes)
            while let frame = try decoder.next() {
                if let opener {
                    let message = try messageDecoder.decode(try opener.open(frame))
                    callbacks.received(self, message)
                } else {
                    established = try perform(handshake.receive(frame))
                }
            }
        }
    }

    /// Carries out handshake directives; true once keys are agreed.
    private func perform(_ directives: [Handshake.Directive]) throws -> Bool {
        for directive in directives {
            switch directive {
            case .send(let frame):
                write(frame)
            case .established(let keys):
                opener = keys.opener
                sealer = keys.sealer
                socket.setReceiveTimeout(milliseconds: 0)
                callbacks.established(self)
                return true
            case .fail(let failure):
                writer.sync {}
                throw failure
            }
        }
        return false
    }
}
