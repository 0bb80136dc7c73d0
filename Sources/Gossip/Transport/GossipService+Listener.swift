import Dispatch
import Glibc
import PeerNet
import SyncProtocol

/// Accepting strangers and dialing peers (loop thread only).
extension GossipService {
    /// Connections accepted per wakeup, so that one flood cannot starve the rest of the loop.
    static let acceptsPerWakeup = 64

    func watchListener() {
        guard let listener else { return }
        do {
            try loop.watch(listener.descriptor, for: .readable) { [self] _ in acceptWaiting() }
        } catch {
            logger(LogRecord(.error, .listenerFailed, "cannot watch the listen socket", [("error", "\(error)")]))
        }
    }

    /// Takes waiting connections: each is admitted to the handshake or
    /// closed at once. Out of descriptors, accepting rests for a moment and
    /// then resumes by itself: the connection stays in the backlog.
    private func acceptWaiting() {
        guard let listener, !shuttingDown else { return }
        for _ in 0..<Self.acceptsPerWakeup {
            let accepted: Socket?
            do {
                accepted = try listener.acceptWaiting()
            } catch let error as SocketError {
                return pauseAccepting(after: error)
            } catch {
                return
            }
            guard let socket = accepted else { return }
            admit(socket)
        }
    }

    private func admit(_ socket: Socket) {
        let host = socket.remoteHost ?? "?"
        let id = nextConnectionID
        nextConnectionID += 1
        if let refusal = pending.admit(host, limits: configuration.admission) {
            let reason =
                refusal == .tooManyHandshakes
                ? "too many handshakes in progress (\(configuration.admission.maxPending))"
                : "too many handshakes in progress from \(host) (\(configuration.admission.maxPendingPerHost))"
            let record = LogRecord(
                .warning, .connectionRefused, "connection refused",
                [("conn", "\(id)"), ("remote", host), ("reason", reason)])
            noteRefusal(refusal, record, reason: reason)
            socket.shutdown()
            return
        }
        let connection = PeerConnection(
            id: id, socket: socket, dialed: nil, phase: .handshaking(nil, deadline: handshakeDeadline(for: id)),
            preHandshakeFrameLimit: configuration.admission.maxPreHandshakeFrame)
        beginHandshake(connection)
    }

    private func pauseAccepting(after error: SocketError) {
        guard let listener else { return }
        let pause = configuration.admission.acceptPauseMs
        let reason = "\(error); accepting again in \(pause) ms"
        let record = LogRecord(.error, .listenerFailed, "cannot accept connections", [("error", reason)])
        noteRefusal(.acceptFailed, record, reason: reason)
        loop.rewatch(listener.descriptor, for: [])
        loop.schedule(after: pause) { [self] in
            guard let listener = self.listener, !shuttingDown else { return }
            loop.rewatch(listener.descriptor, for: .readable)
        }
    }

    /// Connects to `address` without blocking the loop: a numeric address
    /// at once, a host name after it is resolved off the loop.
    func dial(_ address: PeerAddress) {
        guard !shuttingDown else { return }
        if let numeric = SocketAddress.numeric(host: address.host, port: address.port) {
            return connect(address, to: numeric)
        }
        DispatchQueue.global().async { [self] in
            let resolved = Result { try SocketAddress.resolve(host: address.host, port: address.port) }
            loop.execute { [self] in
                switch resolved {
                case .success(let target): connect(address, to: target)
                case .failure(let error): dialFailed(address, reason: "\(error)")
                }
            }
        }
    }

    private func connect(_ address: PeerAddress, to target: SocketAddress) {
        guard !shuttingDown else { return }
        let socket: Socket
        do {
            socket = try Socket.startConnecting(to: target)
        } catch {
            return dialFailed(address, reason: "\(error)")
        }
        let id = nextConnectionID
        nextConnectionID += 1
        let timeout = configuration.connectTimeoutMs
        let deadline = loop.schedule(after: timeout) { [self] in
            guard let connection = connections[id], case .connecting = connection.phase else { return }
            abandonDial(connection, reason: "connect \(address): timed out after \(timeout) ms")
        }
        let connection = PeerConnection(
            id: id, socket: socket, dialed: address, phase: .connecting(deadline: deadline),
            preHandshakeFrameLimit: configuration.admission.maxPreHandshakeFrame)
        connections[id] = connection
        do {
            try loop.watch(socket.descriptor, for: .writable) { [self] _ in connected(id) }
        } catch {
            abandonDial(connection, reason: "\(error)")
        }
    }

    /// A dialed socket became writable: connected, or failed.
    private func connected(_ id: ConnectionID) {
        guard let connection = connections[id], case .connecting(let deadline) = connection.phase,
            let address = connection.dialed
        else { return }
        loop.cancel(deadline)
        if let error = connection.socket.connectionError {
            return abandonDial(connection, reason: "connect \(address): \(error)")
        }
        loop.unwatch(connection.socket.descriptor)
        connections[id] = nil
        let handshaking = PeerConnection(
            id: id, socket: connection.socket, dialed: address,
            phase: .handshaking(nil, deadline: handshakeDeadline(for: id)),
            preHandshakeFrameLimit: configuration.admission.maxPreHandshakeFrame)
        beginHandshake(handshaking)
    }

    private func abandonDial(_ connection: PeerConnection, reason: String) {
        connections[connection.id] = nil
        loop.unwatch(connection.socket.descriptor)
        connection.socket.shutdown()
        dialFailed(connection.dialed!, reason: reason)
        finishShutdownIfDrained()
    }

    private func dialFailed(_ address: PeerAddress, reason: String) {
        node.dialFailed(address, reason: reason, now: loop.now)
        carryOut([])
    }
}
