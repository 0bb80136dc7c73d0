import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The raw loopback TCP figures the sync rows are read against: plain
/// sockets on 127.0.0.1, no framing, no encryption, no storage.
enum LoopbackBaseline {
    /// One stream: a thread sends `totalBytes` in `chunk`-byte writes, this thread reads.
    static func throughput(totalBytes: Int = 1 << 30, chunk: Int = 128 << 10) throws -> LoopbackThroughput {
        let (sender, receiver) = try connectedPair()
        defer {
            close(sender)
            close(receiver)
        }
        let done = DispatchSemaphore(value: 0)
        let start = ContinuousClock.now
        let thread = Thread {
            var buffer = [UInt8](repeating: 0x5A, count: chunk)
            var sent = 0
            while sent < totalBytes {
                let count = buffer.withUnsafeMutableBytes {
                    send(sender, $0.baseAddress, min(chunk, totalBytes - sent), 0)
                }
                if count <= 0 { break }
                sent += count
            }
            done.signal()
        }
        thread.start()
        var buffer = [UInt8](repeating: 0, count: chunk)
        var received = 0
        while received < totalBytes {
            let count = buffer.withUnsafeMutableBytes { recv(receiver, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { throw SocketFailure("loopback receive ended after \(received) bytes") }
            received += count
        }
        let seconds = (ContinuousClock.now - start).seconds
        done.wait()
        return LoopbackThroughput(bytes: received, seconds: seconds, chunk: chunk)
    }

    /// `samples` round trips of `size` bytes each way with `TCP_NODELAY`:
    /// the floor of one hop of live propagation.
    static func pingPong(samples: Int, size: Int = 200) throws -> LatencySummary {
        let (client, server) = try connectedPair()
        defer {
            close(client)
            close(server)
        }
        for descriptor in [client, server] {
            var one: Int32 = 1
            setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        }
        let echo = Thread {
            var buffer = [UInt8](repeating: 0, count: size)
            while receiveExactly(server, &buffer) {
                let count = buffer.withUnsafeBytes { send(server, $0.baseAddress, $0.count, 0) }
                if count != size { return }
            }
        }
        echo.start()
        var message = [UInt8](repeating: 0x42, count: size)
        var durations: [Duration] = []
        durations.reserveCapacity(samples)
        for _ in 0..<samples {
            let start = ContinuousClock.now
            let count = message.withUnsafeBytes { send(client, $0.baseAddress, $0.count, 0) }
            guard count == size, receiveExactly(client, &message) else {
                throw SocketFailure("loopback ping-pong broke off")
            }
            durations.append(ContinuousClock.now - start)
        }
        shutdown(client, Int32(SHUT_RDWR))
        return LatencySummary(durations)
    }

    /// Reads until `buffer` is full; false when the stream ends first.
    private static func receiveExactly(_ descriptor: Int32, _ buffer: inout [UInt8]) -> Bool {
        var filled = 0
        while filled < buffer.count {
            let count = buffer.withUnsafeMutableBytes {
                recv(descriptor, $0.baseAddress! + filled, $0.count - filled, 0)
            }
            if count <= 0 { return false }
            filled += count
        }
        return true
    }

    /// Two ends of one TCP connection on 127.0.0.1 (client, accepted).
    private static func connectedPair() throws -> (Int32, Int32) {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard listener >= 0 else { throw SocketFailure("socket: \(String(cString: strerror(errno)))") }
        defer { close(listener) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { generic in
                bind(listener, generic, length) == 0 && listen(listener, 1) == 0
                    && getsockname(listener, generic, &length) == 0
            }
        }
        guard bound else { throw SocketFailure("bind/listen: \(String(cString: strerror(errno)))") }
        let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(client, $0, length) == 0 }
        }
        guard client >= 0, connected else {
            if client >= 0 { close(client) }
            throw SocketFailure("connect: \(String(cString: strerror(errno)))")
        }
        let server = accept(listener, nil, nil)
        guard server >= 0 else {
            close(client)
            throw SocketFailure("accept: \(String(cString: strerror(errno)))")
        }
        return (client, server)
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

/// A failed socket call in the loopback baseline.
struct SocketFailure: Error, CustomStringConvertible {
    var description: String

    init(_ description: String) { self.description = description }
}
