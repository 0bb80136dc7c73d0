import PeerNet
import SyncProtocol

/// One connection's life on the loop: reading frames, the handshake,
/// sealed messages through the codec, writing, closing (loop thread only).
extension GossipService {
    /// At most this many frames wait in a connection's codec before reading pauses.
    static let maxFramesInCodec = 16

    /// Watches a connection that starts its handshake now.
    func beginHandshake(_ connection: PeerConnection) {
        connections[connection.id] = connection
        do {
            try loop.watch(connection.socket.descriptor, for: .readable) { [self] readiness in
                ready(connection.id, readiness)
            }
        } catch {
            return finish(connection, reason: "cannot watch the socket: \(error)")
        }
        if connection.dialed != nil {
            var handshake = Handshake(
                role: .initiator, clusterKey: clusterKey, ephemeral: Handshake.ephemeralKeyPair())
            let directives = handshake.start()
            connection.phase = .handshaking(handshake, deadline: handshakeDeadline(for: connection.id))
            perform(directives, on: connection)
        }
    }

    func handshakeDeadline(for id: ConnectionID) -> EventLoop.TimerID {
        let limit = configuration.admission.handshakeDeadlineMs
        return loop.schedule(after: limit) { [self] in
            guard let connection = connections[id], !connection.isEstablished else { return }
            refuse(connection, .handshakeDeadline, reason: "handshake not finished within \(limit) ms")
        }
    }

    /// The socket is readable, writable, or hung up.
    func ready(_ id: ConnectionID, _ readiness: EventLoop.Readiness) {
        guard let connection = connections[id] else { return }
        if readiness.contains(.writable) { flushOutbound(connection) }
        guard connections[id] != nil, readiness.contains(.readable) || readiness.contains(.hangUp) else { return }
        guard !connection.readingPaused else { return }
        let open: Bool
        do {
            open = try connection.readAvailable(into: receiveBuffer)
        } catch {
            return ended(connection, reason: "\(error)")
        }
        if case .closing = connection.phase {
            if !open { finish(connection, reason: connection.closeReason ?? "closed") }
            return
        }
        handleFrames(connection)
        guard connections[id] != nil, !open else { return }
        let buffered = connection.decoder.bufferedCount
        if buffered > 0 {
            ended(connection, reason: "connection closed by peer in the middle of a frame (\(buffered) bytes)")
        } else {
            ended(
                connection,
                reason: connection.isEstablished
                    ? "connection closed by peer" : "connection closed by peer during the handshake")
        }
    }

    /// Takes every whole frame out of the decoder.
    private func handleFrames(_ connection: PeerConnection) {
        while connections[connection.id] != nil, !connection.readingPaused {
            let frame: Frame?
            do {
                frame = try connection.decoder.next()
            } catch {
                if connection.isEstablished { return close(connection.id, reason: "\(error)", flush: false) }
                return refuse(connection, .badFrame, reason: "\(error)")
            }
            guard let frame else { return }
            switch connection.phase {
            case .handshaking(let existing, let deadline):
                var handshake =
                    existing
                    ?? Handshake(role: .responder, clusterKey: clusterKey, ephemeral: Handshake.ephemeralKeyPair())
                let directives = handshake.receive(frame)
                connection.phase = .handshaking(handshake, deadline: deadline)
                perform(directives, on: connection)
            case .established(let codec):
                if connection.codecIsIdle, ConnectionCodec.opensInline(frame) {
                    guard deliver(codec.openNow(frame), on: connection.id) else { return }
                    continue
                }
                connection.framesInCodec += 1
                if connection.framesInCodec >= Self.maxFramesInCodec { pauseReading(connection) }
                let id = connection.id
                codec.open(frame) { [self] opened in
                    loop.execute { [self] in delivered(opened, on: id) }
                }
            case .connecting, .closing:
                return
            }
        }
    }

    /// Carries out handshake directives.
    private func perform(_ directives: [Handshake.Directive], on connection: PeerConnection) {
        for directive in directives {
            switch directive {
            case .send(let frame):
                write(frame.encoded(), to: connection)
            case .established(let keys):
                established(connection, keys: keys)
            case .fail(let failure):
                return refuse(
                    connection, .handshakeFailed, reason: failure.reason, cause: failure.kind.rawValue, flush: true)
            }
        }
    }

    private func established(_ connection: PeerConnection, keys: SessionKeys) {
        if case .handshaking(_, let deadline) = connection.phase { loop.cancel(deadline) }
        connection.phase = .established(
            ConnectionCodec(
                id: connection.id, keys: keys, catchUp: catchUpSealing, compression: configuration.wireCompression,
                pruning: configuration.node.session.prunesLinks && configuration.node.session.livePush))
        connection.decoder.maximumSize = Frame.maximumSize
        if connection.countedAsPending {
            connection.countedAsPending = false
            pending.finished(connection.remoteHost)
        }
        logger(
            LogRecord(
                .info, .connectionEstablished, "connection established",
                [("conn", "\(connection.id)"), ("remote", connection.remoteHost)]
                    + (connection.dialed.map { [("dialed", $0.description)] } ?? [])))
        carryOut(
            node.connectionOpened(
                connection.id, dialed: connection.dialed, remoteHost: connection.remoteHost,
                transcript: keys.transcript, now: loop.now))
    }

    /// A frame the codec's queue opened (or could not).
    private func delivered(_ opened: Result<Message, any Error>, on id: ConnectionID) {
        guard let connection = connections[id], connection.isEstablished else { return }
        connection.framesInCodec -= 1
        guard deliver(opened, on: id) else { return }
        if connection.readingPaused, connection.framesInCodec <= Self.maxFramesInCodec / 2 {
            connection.readingPaused = false
            rewatch(connection)
            handleFrames(connection)
        }
    }

    /// Hands an opened message to the node; false when the frame could not
    /// be opened, and the connection closes.
    private func deliver(_ opened: Result<Message, any Error>, on id: ConnectionID) -> Bool {
        switch opened {
        case .success(let message):
            carryOut(node.received(message, on: id, now: loop.now))
            return true
        case .failure(let error):
            close(id, reason: "\(error)", flush: false)
            return false
        }
    }

    private func pauseReading(_ connection: PeerConnection) {
        connection.readingPaused = true
        rewatch(connection)
    }

    /// Watches for what the connection waits for now: reading (unless
    /// paused) and writing (while bytes are queued).
    private func rewatch(_ connection: PeerConnection) {
        var interest: EventLoop.Readiness = connection.readingPaused ? [] : .readable
        if connection.hasOutbound { interest.insert(.writable) }
        loop.rewatch(connection.socket.descriptor, for: interest)
    }

    /// Seals `message` on the connection's codec and queues it: at once
    /// when it is small and nothing waits in the codec, else on its queue.
    func send(_ message: Message, on id: ConnectionID) {
        guard let connection = connections[id], case .established(let codec) = connection.phase else { return }
        if connection.codecIsIdle, ConnectionCodec.sealsInline(message) {
            return write(sealed: codec.sealNow(message), to: connection)
        }
        connection.sealsInCodec += 1
        codec.seal(message) { [self] sealed in
            loop.execute { [self] in
                guard let connection = connections[id] else { return }
                connection.sealsInCodec -= 1
                write(sealed: sealed, to: connection)
            }
        }
    }

    private func write(sealed: Result<[UInt8], any Error>, to connection: PeerConnection) {
        switch sealed {
        case .success(let bytes) where bytes.isEmpty:
            break  // not for this peer (see `ConnectionCodec.seal`)
        case .success(let bytes):
            write(bytes, to: connection)
        case .failure(let error):
            logger(
                LogRecord(.error, .sendFailed, "cannot send", [("conn", "\(connection.id)"), ("error", "\(error)")]))
            close(connection.id, reason: "cannot send: \(error)", flush: false)
        }
    }

    func write(_ bytes: [UInt8], to connection: PeerConnection) {
        let waiting = connection.hasOutbound
        connection.enqueue(bytes)
        if !waiting { flushOutbound(connection) }
    }

    private func flushOutbound(_ connection: PeerConnection) {
        do {
            let empty = try connection.writeOutbound()
            if empty, case .closing = connection.phase, connection.closeReason != nil {
                connection.socket.shutdown(.write)
            }
            rewatch(connection)
        } catch {
            ended(connection, reason: "send failed: \(error)")
        }
    }

    /// Ends a connection. With `flush`, what is queued (and being sealed) is
    /// written first, then the write side is shut and the peer drained
    /// until it closes, for at most `lingerMs`.
    func close(_ id: ConnectionID, reason: String, flush: Bool) {
        guard let connection = connections[id], connection.closeReason == nil else { return }
        connection.closeReason = reason
        guard flush else { return finish(connection, reason: reason) }
        if case .established(let codec) = connection.phase {
            // Messages sealed before the close go out before it.
            codec.afterPending { [self] in loop.execute { [self] in startClosing(id, reason: reason) } }
        } else {
            startClosing(id, reason: reason)
        }
    }

    /// Shuts the write side once the queue is written; the linger timer
    /// closes the socket if the peer never does.
    private func startClosing(_ id: ConnectionID, reason: String) {
        guard let connection = connections[id] else { return }
        if case .handshaking(_, let deadline) = connection.phase { loop.cancel(deadline) }
        connection.phase = .closing
        connection.readingPaused = false
        reportClosed(connection, reason: reason)
        if !connection.hasOutbound { connection.socket.shutdown(.write) }
        rewatch(connection)
        loop.schedule(after: configuration.lingerMs) { [self] in
            if let connection = connections[id] { finish(connection, reason: reason) }
        }
    }

    /// A stranger is turned away: counted, logged once per kind and interval.
    func refuse(
        _ connection: PeerConnection, _ kind: RefusalKind, reason: String, cause: String? = nil, flush: Bool = false
    ) {
        let record = LogRecord(
            .warning, .connectionRefused, "connection refused",
            [("conn", "\(connection.id)"), ("remote", connection.remoteHost), ("reason", reason)]
                + (cause.map { [("cause", $0)] } ?? []))
        noteRefusal(kind, record, reason: reason)
        if connection.dialed != nil { node.dialFailed(connection.dialed!, reason: reason, now: loop.now) }
        if !shuttingDown { handshakeFailures += 1 }
        close(connection.id, reason: reason, flush: flush && connection.hasOutbound)
    }

    /// Logs `record` unless one of its kind was logged this interval.
    func noteRefusal(_ kind: RefusalKind, _ record: LogRecord, reason: String) {
        var record = record
        record.fields.insert(("kind", kind.rawValue), at: 0)
        if let line = refusals.refused(kind, record, reason: reason, now: loop.now) { logger(line) }
        scheduleRefusalSummaries()
    }

    /// Logs the summaries of refusal intervals as they end.
    private func scheduleRefusalSummaries() {
        guard refusalTimer == nil, let at = refusals.nextFlushAt else { return }
        refusalTimer = loop.schedule(at: at) { [self] in
            refusalTimer = nil
            for line in refusals.flush(now: loop.now) { logger(line) }
            scheduleRefusalSummaries()
        }
    }

    /// The peer closed, or the socket failed: before the session started
    /// it is a refusal, after it an ordinary close.
    private func ended(_ connection: PeerConnection, reason: String) {
        if case .closing = connection.phase { return finish(connection, reason: connection.closeReason ?? reason) }
        // A close already asked for (a goodbye that came with the peer's last bytes) says why, not the EOF.
        if let asked = connection.closeReason { return finish(connection, reason: asked) }
        if connection.isEstablished {
            connection.closeReason = reason
            return finish(connection, reason: reason)
        }
        refuse(connection, .leftEarly, reason: reason)
    }

    /// Tells the node (and the log) once that an established connection is gone.
    private func reportClosed(_ connection: PeerConnection, reason: String) {
        guard node.sessions[connection.id] != nil || node.manager.connections[connection.id] != nil else { return }
        logger(
            LogRecord(
                .info, .connectionClosed, "connection closed",
                [("conn", "\(connection.id)"), ("remote", connection.remoteHost), ("reason", reason)]))
        node.connectionClosed(connection.id, now: loop.now)
        carryOut([])
    }

    /// Closes the socket and forgets the connection.
    func finish(_ connection: PeerConnection, reason: String) {
        guard connections.removeValue(forKey: connection.id) != nil else { return }
        switch connection.phase {
        case .handshaking(_, let deadline), .connecting(let deadline): loop.cancel(deadline)
        case .established, .closing: break
        }
        if connection.countedAsPending {
            connection.countedAsPending = false
            pending.finished(connection.remoteHost)
        }
        reportClosed(connection, reason: reason)
        loop.unwatch(connection.socket.descriptor)
        connection.socket.shutdown(.both)
        closedTraffic.received += connection.bytesReceived
        closedTraffic.sent += connection.bytesSent
        connection.phase = .closing
        finishShutdownIfDrained()
    }
}
