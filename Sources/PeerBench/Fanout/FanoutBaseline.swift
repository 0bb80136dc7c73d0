import ChildProcesses
import Foundation
import PeerNet

/// The raw loopback TCP floor under `peerd-bench relay-fanout`: the same
/// fan-out with no protocol, no encryption and no storage. One thread
/// writes a 100-byte message stamped with its send time to each of `clients`
/// sockets, `rate` rounds a second; one event loop thread reads every
/// socket, as the bench's clients do, and takes each arrival as a sample.
struct FanoutBaseline {
    let clients: Int
    let rate: Int
    let rounds: Int
    static let messageSize = 100

    func run() throws -> FanoutDeliveries {
        let listener = try Socket.listen(host: "127.0.0.1", port: 0, backlog: Int32(min(clients, 4_096)))
        var senders: [Socket] = []
        var receivers: [Socket] = []
        for _ in 0..<clients {
            receivers.append(try Socket.connect(host: "127.0.0.1", port: listener.localPort))
            senders.append(try listener.accept())
        }
        let loop = try EventLoop(name: "fanout-baseline")
        let reader = BaselineReader(expected: clients * rounds)
        loop.start()
        defer { loop.stop() }
        let watched = DispatchSemaphore(value: 0)
        loop.execute { [receivers] in
            for socket in receivers {
                socket.setNonBlocking()
                try? loop.watch(socket.descriptor, for: .readable) { _ in reader.read(socket) }
            }
            watched.signal()
        }
        watched.wait()
        let start = ContinuousClock.now
        for round in 0..<rounds {
            let due = start + .nanoseconds(Int64(Double(round) / Double(rate) * 1e9))
            let wait = due - ContinuousClock.now
            if wait > .zero { Thread.sleep(forTimeInterval: wait.seconds) }  // pacing, not waiting for a result
            var message = [UInt8](repeating: 0x42, count: Self.messageSize)
            withUnsafeBytes(of: monotonicNanoseconds().bigEndian) { message.replaceSubrange(0..<8, with: $0) }
            for socket in senders { try socket.send(message) }
        }
        guard reader.wait(seconds: 30) else {
            throw ChildProcessError(
                "the raw fan-out delivered \(reader.deliveries.count) of \(clients * rounds) messages")
        }
        return reader.deliveries
    }
}

/// The reading side of `FanoutBaseline`: cuts 100-byte messages out of each
/// socket's stream on the loop thread and notes each one's latency.
///
/// `@unchecked Sendable`: `partial` is touched on the loop thread only; the
/// deliveries are behind `lock`.
private final class BaselineReader: @unchecked Sendable {
    private let expected: Int
    private let lock = NSCondition()
    private var noted = FanoutDeliveries()
    private var partial: [Int32: [UInt8]] = [:]
    private var buffer = [UInt8](repeating: 0, count: 64 << 10)

    init(expected: Int) { self.expected = expected }

    var deliveries: FanoutDeliveries { lock.withLock { noted } }

    func read(_ socket: Socket) {
        let count = buffer.withUnsafeMutableBytes { (try? socket.receiveAvailable(into: $0)) ?? nil } ?? 0
        guard count > 0 else { return }
        let now = monotonicNanoseconds()
        var bytes = partial[socket.descriptor, default: []] + buffer[..<count]
        var samples: [UInt64] = []
        while bytes.count >= FanoutBaseline.messageSize {
            samples.append(bytes[0..<8].reduce(0) { $0 << 8 | UInt64($1) })
            bytes.removeFirst(FanoutBaseline.messageSize)
        }
        partial[socket.descriptor] = bytes
        lock.withLock {
            for sent in samples { noted.note(sentNanos: sent, atNanos: now) }
            if noted.count >= expected { lock.broadcast() }
        }
    }

    /// Waits until every message arrived; false after `seconds`.
    func wait(seconds: Double) -> Bool {
        let deadline = Date(timeIntervalSinceNow: seconds)
        return lock.withLock {
            while noted.count < expected { if !lock.wait(until: deadline) { return false } }
            return true
        }
    }
}
