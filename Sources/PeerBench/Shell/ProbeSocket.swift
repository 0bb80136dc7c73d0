import Foundation
import PeerNet

/// What one `send` or `recv` on a non-blocking socket did.
enum Transfer: Equatable {
    /// This many bytes went out or came in.
    case moved(Int)
    /// Nothing now: the buffer is full (send) or empty (receive).
    case wouldBlock
    /// The peer closed its side (receive returned 0).
    case ended
    /// The call failed with this `errno` (`ECONNRESET`, `EPIPE` ...).
    case failed(Int32)
}

/// The non-blocking calls the shell benchmark makes as a stranger on a
/// daemon's port: PeerNet's, with their outcome as a `Transfer`.
extension Socket {
    /// Starts connecting to `127.0.0.1:port` without waiting (`connectionError` tells the outcome).
    static func startConnecting(port: UInt16) throws -> Socket {
        try startConnecting(to: SocketAddress.numeric(host: "127.0.0.1", port: port)!)
    }

    /// Connects to `127.0.0.1:port` and makes the socket non-blocking.
    static func connectedNonBlocking(port: UInt16) throws -> Socket {
        let socket = try connect(host: "127.0.0.1", port: port)
        socket.setNonBlocking()
        return socket
    }

    /// Waits until one of `events` (or an error or hang-up) is reported or
    /// the deadline passes; returns the reported events, 0 on timeout.
    func wait(for events: Int16, until deadline: ContinuousClock.Instant) -> Int16 {
        var request = pollfd(fd: descriptor, events: events, revents: 0)
        while true {
            let remaining = deadline - .now
            let milliseconds = remaining > .zero ? Int32(min(remaining.seconds * 1000 + 1, 1_000_000)) : 0
            let ready = poll(&request, 1, milliseconds)
            if ready > 0 { return request.revents }
            if ready == 0 && ContinuousClock.now >= deadline { return 0 }
            if ready < 0 && errno != EINTR { return Int16(POLLERR) }
        }
    }

    /// Sends what the kernel takes now of `bytes`.
    func send(_ bytes: ArraySlice<UInt8>) -> Transfer {
        Self.transfer { try bytes.withUnsafeBytes { try sendAvailable($0) } }
    }

    /// Reads what has arrived, at most `buffer.count` bytes.
    func receive(into buffer: inout [UInt8]) -> Transfer {
        Self.transfer { try buffer.withUnsafeMutableBytes { try receiveAvailable(into: $0) } }
    }

    /// Sends all of `bytes`, waiting while the kernel's buffer is full, until the deadline.
    func sendAll(_ bytes: [UInt8], until deadline: ContinuousClock.Instant) throws {
        var sent = 0
        while sent < bytes.count {
            switch send(bytes[sent...]) {
            case .moved(let count): sent += count
            case .wouldBlock:
                guard wait(for: Int16(POLLOUT), until: deadline) != 0 else {
                    throw ProbeError.timedOut("sending (\(sent) of \(bytes.count) bytes sent)")
                }
            case .ended: throw ProbeError.closed("the daemon closed the connection while we sent")
            case .failed(let code): throw ProbeError.system("send", code)
            }
        }
    }

    private static func transfer(_ call: () throws -> Int?) -> Transfer {
        do {
            guard let count = try call() else { return .wouldBlock }
            return count > 0 ? .moved(count) : .ended
        } catch let error as SocketError {
            return .failed(error.code)
        } catch {
            return .failed(EIO)
        }
    }
}

/// Why a connection to the daemon did not do what the benchmark needed.
enum ProbeError: Error, CustomStringConvertible {
    /// A system call failed with `errno`.
    case system(String, Int32)
    /// A deadline passed.
    case timedOut(String)
    /// The daemon closed the connection early.
    case closed(String)
    /// The daemon answered something the benchmark cannot read.
    case malformed(String)

    /// The system's name for an `errno` value, e.g. `Connection refused`.
    static func text(_ code: Int32) -> String { String(cString: strerror(code)) }

    var description: String {
        switch self {
        case .system(let operation, let code): "\(operation): \(ProbeError.text(code)) (errno \(code))"
        case .timedOut(let what): "timed out: \(what)"
        case .closed(let what): what
        case .malformed(let what): "malformed answer: \(what)"
        }
    }
}
