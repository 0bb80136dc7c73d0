import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The link's own throughput: one raw TCP stream, no framing, no encryption, no storage. `peerd-bench wifi`
/// runs both ends as `peerd-bench link-probe` inside the lab's hosts:
///
/// ```
/// peerd-bench link-probe receive PORT          # accepts one connection, reads to its end, prints
///                                              # `link-probe: received BYTES bytes in SECONDS s`
/// peerd-bench link-probe send ADDRESS PORT BYTES
/// ```
///
/// The receiver times from the first byte to the end of the stream, so connection setup is not counted
/// and the rate is the payload's (goodput), as ``WifiBenchmark`` counts peerd's wire bytes.
enum LinkProbe {
    /// Runs `link-probe ARGUMENTS`.
    static func main(_ arguments: [String]) throws {
        switch arguments.first {
        case "receive" where arguments.count == 2:
            guard let port = UInt16(arguments[1]) else { throw UsageError("link-probe: bad port \(arguments[1])") }
            try receive(port: port)
        case "send" where arguments.count == 4:
            guard let port = UInt16(arguments[2]), let bytes = Int(arguments[3]) else {
                throw UsageError("link-probe: send ADDRESS PORT BYTES")
            }
            try send(to: arguments[1], port: port, bytes: bytes)
        default:
            throw UsageError("link-probe: receive PORT | send ADDRESS PORT BYTES")
        }
    }

    /// The line the receiver prints; ``parse(_:)`` reads it back.
    static let prefix = "link-probe: received "

    /// (bytes, seconds) from the receiver's line.
    static func parse(_ line: String) -> (bytes: Int, seconds: Double)? {
        let words = line.dropFirst(prefix.count).split(separator: " ")
        guard words.count >= 4, let bytes = Int(words[0]), let seconds = Double(words[3]) else { return nil }
        return (bytes, seconds)
    }

    private static func receive(port: UInt16) throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard listener >= 0 else { throw SocketFailure("socket: \(String(cString: strerror(errno)))") }
        defer { close(listener) }
        var one: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = INADDR_ANY
        let bound = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 && listen(listener, 1) == 0
            }
        }
        guard bound else { throw SocketFailure("bind/listen: \(String(cString: strerror(errno)))") }
        print("link-probe: listening on port \(port)")
        fflush(nil)
        let connection = accept(listener, nil, nil)
        guard connection >= 0 else { throw SocketFailure("accept: \(String(cString: strerror(errno)))") }
        defer { close(connection) }
        var buffer = [UInt8](repeating: 0, count: 128 << 10)
        var received = 0
        var first: ContinuousClock.Instant?
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(connection, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { break }
            if first == nil { first = .now }
            received += count
        }
        let seconds = first.map { (ContinuousClock.now - $0).seconds } ?? 0
        print("\(prefix)\(received) bytes in \(String(format: "%.6f", seconds)) s")
        fflush(nil)
    }

    private static func send(to host: String, port: UInt16, bytes: Int) throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw SocketFailure("socket: \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr(host)
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        guard connected else { throw SocketFailure("connect \(host):\(port): \(String(cString: strerror(errno)))") }
        var buffer = [UInt8](repeating: 0x5A, count: 128 << 10)
        var sent = 0
        while sent < bytes {
            let count = buffer.withUnsafeMutableBytes {
                Glibc.send(descriptor, $0.baseAddress, min($0.count, bytes - sent), 0)
            }
            guard count > 0 else {
                throw SocketFailure("send after \(sent) bytes: \(String(cString: strerror(errno)))")
            }
            sent += count
        }
        shutdown(descriptor, Int32(SHUT_WR))
        // Wait for the receiver's close, so that this process ends only once every byte has arrived.
        while buffer.withUnsafeMutableBytes({ recv(descriptor, $0.baseAddress, $0.count, 0) }) > 0 {}
    }
}

/// A link's shape as `tc` reads it.
enum LinkShape {
    /// `20mbit`, `5000kbit`, `1gbit` or `64000bit` in Mbit/s (10^6 bits per second); nil for other units.
    static func megabitsPerSecond(_ rate: String) -> Double? {
        let lower = rate.lowercased()
        for (unit, scale) in [("gbit", 1e3), ("mbit", 1.0), ("kbit", 1e-3), ("bit", 1e-6)] where lower.hasSuffix(unit) {
            return Double(lower.dropLast(unit.count)).map { $0 * scale }
        }
        return nil
    }
}
