import Foundation
import PeerNet
import Replica
import SyncProtocol

/// One lightweight replica of `peerd-bench relay-fanout`: a real
/// connection to the relay (the encrypted handshake, sealed frames, a
/// `SyncSession` with hello, cursors and acks) that keeps what it receives
/// in memory as a cursor only, and notes each event's arrival. It lives on
/// its swarm's event loop thread and is touched nowhere else.
final class FanoutClient {
    enum Phase {
        case connecting
        case handshaking(Handshake)
        case established
        case closed(String)
    }

    let index: Int
    let socket: Socket
    private let clusterKey: ClusterKey
    private(set) var phase = Phase.connecting
    private var frames = FrameDecoder()
    private var sealer: FrameSealer?
    private var opener: FrameOpener?
    private var encoder = MessageEncoder()
    private var decoder = MessageDecoder()
    private var session: SyncSession?
    private var cursor = VectorCursor()
    private var outgoing: [UInt8] = []
    private var outgoingStart = 0
    /// What the client tells its swarm: a delivered event, a change of phase.
    private let report: (FanoutClient.Report) -> Void

    /// What happened on the connection.
    enum Report {
        /// A batch of events arrived: their payloads, and when (the loop's monotonic nanoseconds).
        case delivered(payloads: [String], atNanos: UInt64)
        /// The session's first cursor exchange is done: the relay pushes live from now on.
        case syncing
        /// The connection ended; `wasSyncing` tells whether it had got that far.
        case closed(reason: String, wasSyncing: Bool)
    }

    init(index: Int, port: UInt16, clusterKey: ClusterKey, report: @escaping (FanoutClient.Report) -> Void) throws {
        self.index = index
        self.clusterKey = clusterKey
        self.report = report
        guard let address = SocketAddress.numeric(host: "127.0.0.1", port: port) else {
            throw BenchmarkFailure(description: "127.0.0.1:\(port) is not a numeric address")
        }
        socket = try Socket.startConnecting(to: address)
    }

    var replicaID: String { "fanout-\(index)" }

    var isSyncing: Bool { session?.isSyncing ?? false }

    var isOpen: Bool {
        if case .closed = phase { return false }
        return true
    }

    /// The socket became writable: the connect finished, or queued bytes may go.
    func writable() {
        if case .connecting = phase {
            if let error = socket.connectionError { return close("connect failed: \(error)") }
            var handshake = Handshake(role: .initiator, clusterKey: clusterKey, ephemeral: Handshake.ephemeralKeyPair())
            let directives = handshake.start()
            phase = .handshaking(handshake)
            for case .send(let frame) in directives { queue(frame.encoded()) }
        }
        flush()
    }

    /// The socket became readable: takes what arrived, frame by frame.
    func readable(into scratch: UnsafeMutableRawBufferPointer) {
        while isOpen {
            let count: Int?
            do {
                count = try socket.receiveAvailable(into: scratch)
            } catch {
                return close("receive failed: \(error)")
            }
            guard let count else { return }
            guard count > 0 else { return close("the relay closed the connection") }
            frames.append(UnsafeRawBufferPointer(rebasing: scratch[..<count]))
            do {
                while isOpen, let frame = try frames.next() { try take(frame) }
            } catch {
                return close("\(error)")
            }
        }
    }

    /// The anti-entropy round: the session's cursor message, the keepalive.
    func tick() {
        guard session != nil else { return }
        carryOut(session!.tick())
    }

    /// Closes the connection, once.
    func close(_ reason: String) {
        guard isOpen else { return }
        let wasSyncing = isSyncing
        phase = .closed(reason)
        socket.shutdown()
        report(.closed(reason: reason, wasSyncing: wasSyncing))
    }

    /// Whether bytes wait to be written (the swarm then watches for writability).
    var wantsToWrite: Bool {
        if case .connecting = phase { return true }
        return outgoingStart < outgoing.count
    }

    // MARK: - Frames and messages

    private func take(_ frame: Frame) throws {
        switch phase {
        case .handshaking(var handshake):
            let directives = handshake.receive(frame)
            phase = .handshaking(handshake)
            for directive in directives {
                switch directive {
                case .send(let frame):
                    queue(frame.encoded())
                case .established(let keys):
                    sealer = keys.sealer
                    opener = keys.opener
                    phase = .established
                    var configuration = SyncSession.Configuration()
                    configuration.prunesLinks = false
                    var session = SyncSession(
                        hello: Hello(replicaID: replicaID, role: .peer, listenPort: 0), configuration: configuration,
                        binding: keys.transcript, role: .initiator)
                    let started = session.start(localCursor: cursor)
                    self.session = session
                    carryOut(started)
                case .fail(let failure):
                    close("handshake failed: \(failure.reason)")
                }
            }
        case .established:
            guard let opener else { return }
            let message = try decoder.decode(try opener.open(frame))
            if case .events(let batch) = message {
                let now = monotonicNanoseconds()
                report(.delivered(payloads: batch.events.map(\.payload), atNanos: now))
            }
            let wasSyncing = isSyncing
            carryOut(session!.receive(message))
            if !wasSyncing && isSyncing { report(.syncing) }
        case .connecting, .closed:
            return
        }
    }

    private func carryOut(_ directives: [SyncSession.Directive]) {
        var pending = directives[...]
        while let directive = pending.popFirst(), isOpen {
            switch directive {
            case .send(let message):
                guard let sealer else { continue }
                queue(sealer.seal(encoder.encode(message)).encoded())
            case .ingest(let batch):
                var newEvents: [FeedID: Int] = [:]
                for event in batch.events where event.seq > cursor[event.feed] {
                    cursor[event.feed] = event.seq
                    newEvents[event.feed, default: 0] += 1
                }
                let feeds = Array(Set(batch.events.map(\.feed)))
                pending.append(
                    contentsOf: session!.ingested(
                        batchID: batch.batchID, cursor: cursor, batchFeeds: feeds, newEvents: newEvents))
            case .close(let reason):
                close(reason)
            default:
                // Identity, peers, state and checkpoints mean nothing to a client that keeps no log.
                continue
            }
        }
        flush()
    }

    private func queue(_ bytes: [UInt8]) {
        if outgoingStart == outgoing.count {
            outgoing.removeAll(keepingCapacity: true)
            outgoingStart = 0
        }
        outgoing += bytes
    }

    private func flush() {
        guard case .closed = phase else {
            while outgoingStart < outgoing.count {
                let sent: Int?
                do {
                    sent = try outgoing.withUnsafeBytes {
                        try socket.sendAvailable(UnsafeRawBufferPointer(rebasing: $0[outgoingStart...]))
                    }
                } catch {
                    return close("send failed: \(error)")
                }
                guard let sent, sent > 0 else { return }
                outgoingStart += sent
            }
            return
        }
    }
}
