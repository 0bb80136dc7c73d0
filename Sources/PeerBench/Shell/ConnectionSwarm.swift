import Foundation
import PeerNet

#if canImport(Glibc)
    import Glibc
#endif

/// Many stranger connections to one port, driven by one thread with
/// `poll`: it connects them in batches, plays each one's `StrangerScript`,
/// drains what the daemon sends, and notes when the daemon closes each.
final class ConnectionSwarm {
    /// Every connection opened so far, in order.
    private(set) var connections: [StrangerConnection] = []
    /// The socket of each connection, nil once it is closed (by either side) or failed.
    private var sockets: [Socket?] = []
    private let port: UInt16
    private var randomBytes = [UInt8](repeating: 0, count: 64 << 10)
    private var scratch = [UInt8](repeating: 0, count: 64 << 10)

    init(port: UInt16) {
        self.port = port
        for index in randomBytes.indices { randomBytes[index] = UInt8.random(in: 0...255) }
    }

    deinit { closeAll() }

    /// The connections of one group.
    func connections(tagged tag: String) -> [StrangerConnection] { connections.filter { $0.tag == tag } }

    /// Opens `count` connections, `batch` connects at a time, each given
    /// `connectSeconds` to finish; keeps playing the open ones meanwhile.
    func open(
        _ count: Int, tag: String, script: StrangerScript, connectSeconds: Double = 2, batch: Int = 100,
        observe: () -> Void = {}
    ) {
        var opened = 0
        while opened < count {
            let size = min(batch, count - opened)
            let start = ContinuousClock.now
            for _ in 0..<size {
                var connection = StrangerConnection(tag: tag, script: script, connectStarted: start)
                var socket: Socket?
                do {
                    socket = try Socket.startConnecting(port: port)
                } catch let error as SocketError {
                    connection.outcome = .connectFailed(error.code)
                } catch {
                    connection.outcome = .connectFailed(EIO)
                }
                connections.append(connection)
                sockets.append(socket)
            }
            opened += size
            let deadline = start + .milliseconds(Int(connectSeconds * 1000))
            pump(until: deadline, observeEvery: 0.25, observe: observe) {
                !connections.contains { $0.outcome == .connecting }
            }
            for index in connections.indices where connections[index].outcome == .connecting {
                connections[index].outcome = .connectTimedOut
                sockets[index] = nil
            }
        }
    }

    /// Keeps every connection going for `seconds` (or until `done` holds),
    /// calling `observe` about every `observeEvery` seconds.
    func hold(seconds: Double, observeEvery: Double = 0.25, observe: () -> Void = {}, done: () -> Bool = { false }) {
        pump(until: .now + .milliseconds(Int(seconds * 1000)), observeEvery: observeEvery, observe: observe, done: done)
    }

    /// Closes every connection still open (the daemon sees a FIN).
    func closeAll() {
        for index in sockets.indices { sockets[index] = nil }
    }

    /// The poll loop: connects finishing, bytes to send, bytes to drain, closes.
    private func pump(
        until deadline: ContinuousClock.Instant, observeEvery: Double, observe: () -> Void, done: () -> Bool
    ) {
        var nextObservation = ContinuousClock.now
        while ContinuousClock.now < deadline && !done() {
            let now = ContinuousClock.now
            if now >= nextObservation {
                observe()
                nextObservation = now + .milliseconds(Int(observeEvery * 1000))
            }
            var watched: [Int] = []
            var requests: [pollfd] = []
            var wake = min(deadline, nextObservation)
            for (index, connection) in connections.enumerated() {
                guard let socket = sockets[index] else { continue }
                var events = Int16(POLLIN)
                if connection.outcome == .connecting || connection.wantsToWrite(at: now) { events |= Int16(POLLOUT) }
                if let drip = connection.nextDrip { wake = min(wake, drip) }
                watched.append(index)
                requests.append(pollfd(fd: socket.descriptor, events: events, revents: 0))
            }
            let timeout = max(0, Int32((wake - now).seconds * 1000) + 1)
            let ready = poll(&requests, nfds_t(requests.count), min(timeout, 100))
            let after = ContinuousClock.now
            if ready > 0 {
                for (slot, request) in requests.enumerated() where request.revents != 0 {
                    service(watched[slot], events: request.revents, at: after)
                }
            }
            for index in watched { drip(index, at: after) }
        }
    }

    private func service(_ index: Int, events: Int16, at now: ContinuousClock.Instant) {
        if connections[index].outcome == .connecting {
            guard let socket = sockets[index] else { return }
            if let failure = socket.connectionError {
                connections[index].outcome = .connectFailed(failure.code)
                sockets[index] = nil
                return
            }
            connections[index].outcome = .open
            connections[index].connectedAt = now
            connections[index].openingRemaining = connections[index].script.opening[...]
            connections[index].floodRemaining = connections[index].script.floodBytes
            if !connections[index].script.drip.isEmpty { connections[index].nextDrip = now }
            write(index, at: now)
            return
        }
        if events & Int16(POLLIN | POLLHUP | POLLERR) != 0 { read(index, at: now) }
        if events & Int16(POLLOUT) != 0 { write(index, at: now) }
    }

    private func read(_ index: Int, at now: ContinuousClock.Instant) {
        guard let socket = sockets[index] else { return }
        switch socket.receive(into: &scratch) {
        case .moved(let count):
            connections[index].received += count
            let room = 512 - connections[index].firstBytes.count
            if room > 0 { connections[index].firstBytes += scratch[..<min(room, count)] }
        case .wouldBlock: break
        case .ended: noteClosed(index, reset: false, at: now)
        case .failed(let code): noteClosed(index, reset: code == ECONNRESET, at: now)
        }
    }

    /// Sends what is due of the opening, then of the flood, without blocking
    /// (at most 256 KiB of flood per call, so that every connection gets its turn).
    private func write(_ index: Int, at now: ContinuousClock.Instant) {
        var budget = 4
        while budget > 0, connections[index].wantsToWrite(at: now) {
            if !connections[index].openingRemaining.isEmpty {
                let moved = send(index, connections[index].openingRemaining, at: now)
                guard moved > 0 else { return }
                connections[index].openingRemaining.removeFirst(moved)
            } else {
                let moved = send(index, randomBytes.prefix(connections[index].floodRemaining), at: now)
                guard moved > 0 else { return }
                connections[index].floodRemaining -= moved
                budget -= 1
            }
        }
    }

    /// One byte of the drip, when it is due.
    private func drip(_ index: Int, at now: ContinuousClock.Instant) {
        guard connections[index].isOpen, let due = connections[index].nextDrip, due <= now else { return }
        let script = connections[index].script
        let sent = connections[index].dripSent
        guard let byte = sent < script.drip.count ? script.drip[sent] : script.dripForever else {
            connections[index].nextDrip = nil
            return
        }
        if send(index, [byte][...], at: now) == 1 { connections[index].dripSent += 1 }
        connections[index].nextDrip = due + .milliseconds(Int(script.dripIntervalSeconds * 1000))
    }

    /// Sends what the kernel takes now of `chunk`; returns how many bytes
    /// that was (0 when none), and notes a close when the send fails.
    private func send(_ index: Int, _ chunk: ArraySlice<UInt8>, at now: ContinuousClock.Instant) -> Int {
        guard let socket = sockets[index] else { return 0 }
        switch socket.send(chunk) {
        case .moved(let count):
            connections[index].sent += count
            return count
        case .wouldBlock, .ended: return 0
        case .failed(let code):
            noteClosed(index, reset: code == ECONNRESET || code == EPIPE, at: now)
            return 0
        }
    }

    /// The daemon closed connection `index`: notes when, and closes our end.
    private func noteClosed(_ index: Int, reset: Bool, at now: ContinuousClock.Instant) {
        connections[index].noteClosed(reset: reset, at: now)
        sockets[index] = nil
    }
}
