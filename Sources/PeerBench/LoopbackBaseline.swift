import ChildProcesses
import Foundation
import PeerNet

/// The raw loopback TCP figures the sync rows are read against: plain
/// sockets on 127.0.0.1, no framing, no encryption, no storage.
enum LoopbackBaseline {
    /// One stream: a thread sends `totalBytes` in `chunk`-byte writes, this thread reads.
    static func throughput(totalBytes: Int = 1 << 30, chunk: Int = 128 << 10) throws -> LoopbackThroughput {
        let (sender, receiver) = try connectedPair()
        let done = DispatchSemaphore(value: 0)
        let start = ContinuousClock.now
        Thread.detachNewThread {
            let buffer = [UInt8](repeating: 0x5A, count: chunk)
            var sent = 0
            while sent < totalBytes,
                let count = try? buffer.withUnsafeBytes({
                    try sender.sendAvailable(UnsafeRawBufferPointer(rebasing: $0[..<min(chunk, totalBytes - sent)]))
                })
            {
                sent += count
            }
            done.signal()
        }
        let received = try drain(receiver, upTo: totalBytes, chunk: chunk)
        let seconds = (ContinuousClock.now - start).seconds
        done.wait()
        guard received == totalBytes else { throw ChildProcessError("loopback receive ended after \(received) bytes") }
        return LoopbackThroughput(bytes: received, seconds: seconds, chunk: chunk)
    }

    /// `samples` round trips of `size` bytes each way with `TCP_NODELAY`:
    /// the floor of one hop of live propagation.
    static func pingPong(samples: Int, size: Int = 200) throws -> LatencySummary {
        let (client, server) = try connectedPair()
        Thread.detachNewThread {
            while (try? drain(server, upTo: size, chunk: size)) == size,
                (try? server.send(Array(repeating: 1, count: size))) != nil
            {}
        }
        let message = [UInt8](repeating: 0x42, count: size)
        var durations: [Duration] = []
        for _ in 0..<samples {
            let start = ContinuousClock.now
            try client.send(message)
            guard try drain(client, upTo: size, chunk: size) == size else {
                throw ChildProcessError("loopback ping-pong broke off")
            }
            durations.append(ContinuousClock.now - start)
        }
        client.shutdown()
        return LatencySummary(durations)
    }

    /// Reads until `total` bytes came or the stream ended; returns how many came.
    static func drain(_ socket: Socket, upTo total: Int, chunk: Int) throws -> Int {
        var buffer = [UInt8](repeating: 0, count: chunk)
        var received = 0
        while received < total {
            let count = try buffer.withUnsafeMutableBytes {
                try socket.receiveAvailable(
                    into: UnsafeMutableRawBufferPointer(rebasing: $0[..<min(chunk, total - received)]))
            }
            guard let count, count > 0 else { break }
            received += count
        }
        return received
    }

    /// Two ends of one TCP connection on 127.0.0.1 (client, accepted).
    private static func connectedPair() throws -> (Socket, Socket) {
        let listener = try Socket.listen(host: "127.0.0.1", port: 0, backlog: 1)
        let client = try Socket.connect(host: "127.0.0.1", port: listener.localPort)
        return (client, try listener.accept())
    }
}

/// What one loopback stream moved.
struct LoopbackThroughput {
    var bytes: Int
    var seconds: Double
    /// Bytes per `send`.
    var chunk: Int

    /// Megabytes (10^6 bytes) per second.
    var megabytesPerSecond: Double { seconds > 0 ? Double(bytes) / 1e6 / seconds : 0 }
}
