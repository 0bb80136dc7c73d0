import Foundation
import Synchronization

/// Connections that each get one more byte every `interval`, and never
/// finish what they send, until `stop()`: a handshake dripped into the
/// gossip port, a request head into the HTTP port (slowloris).
///
/// ```swift
/// let heads = try (0..<256).map { _ in try RawConnection(port: port) }
/// for head in heads { head.send(Array("GET /health HTTP/1.1\r\nX-Slow: ".utf8)) }
/// let slow = Trickle(heads, every: 2) { _ in UInt8(ascii: "a") }
/// ```
///
/// `@unchecked Sendable`: `connections` is set in `init` and only read
/// afterwards, and each one is written by the trickle's thread only.
final class Trickle: @unchecked Sendable {
    let connections: [RawConnection]
    private let stopped = DispatchSemaphore(value: 0)
    private let done = DispatchSemaphore(value: 0)
    private let running = Mutex(true)

    /// Sends `byte(round)` on every open connection each round, from round
    /// 0 at once, until `byte` returns nil or `stop()`.
    init(_ connections: [RawConnection], every interval: TimeInterval, byte: @escaping @Sendable (Int) -> UInt8?) {
        self.connections = connections
        Thread.detachNewThread { [self] in
            var round = 0
            // The pace of the trickle, not a wait for something.
            repeat {
                if let next = byte(round) {
                    for connection in self.connections where connection.isOpen { connection.send([next]) }
                }
                round += 1
            } while stopped.wait(timeout: .now() + interval) == .timedOut
            done.signal()
        }
    }

    /// Connections the daemon still holds open.
    var openCount: Int { connections.filter(\.isOpen).count }

    /// Ends the trickle (the connections close when the last reference
    /// goes); a second call does nothing.
    func stop() {
        guard
            running.withLock({ running in
                defer { running = false }; return running
            })
        else { return }
        stopped.signal()
        done.wait()
    }
}
