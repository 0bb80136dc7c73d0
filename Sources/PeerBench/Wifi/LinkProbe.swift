import DaemonClient
import Foundation
import PeerNet

/// The link's own throughput: one raw TCP stream, no framing, no encryption, no storage; and
/// (`metric PORT NAME`) a counter of the daemon in the same host, read through DaemonClient.
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
        case "metric" where arguments.count == 3:
            guard let port = UInt16(arguments[1]) else { throw UsageError("link-probe: metric PORT NAME") }
            print(try DaemonEndpoint.local(port).metric(arguments[2]))
        default:
            throw UsageError("link-probe: receive PORT | send ADDRESS PORT BYTES | metric PORT NAME")
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
        let listener = try Socket.listen(host: "0.0.0.0", port: port, backlog: 1)
        print("link-probe: listening on port \(port)")
        fflush(nil)
        let connection = try listener.accept()
        var buffer = [UInt8](repeating: 0, count: 128 << 10)
        var received = 0
        var first: ContinuousClock.Instant?
        while let count = try buffer.withUnsafeMutableBytes({ try connection.receiveAvailable(into: $0) }), count > 0 {
            if first == nil { first = .now }
            received += count
        }
        let seconds = first.map { (ContinuousClock.now - $0).seconds } ?? 0
        print("\(prefix)\(received) bytes in \(String(format: "%.6f", seconds)) s")
        fflush(nil)
    }

    private static func send(to host: String, port: UInt16, bytes: Int) throws {
        let connection = try Socket.connect(host: host, port: port, timeoutMs: 30_000)
        let chunk = [UInt8](repeating: 0x5A, count: 128 << 10)
        var sent = 0
        while sent < bytes {
            let part = min(chunk.count, bytes - sent)
            try connection.send(part == chunk.count ? chunk : Array(chunk[..<part]))
            sent += part
        }
        connection.shutdown(.write)
        // Wait for the receiver's close, so that this process ends only once every byte has arrived.
        _ = try LoopbackBaseline.drain(connection, upTo: .max, chunk: 4096)
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
