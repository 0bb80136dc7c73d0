import Glibc
import TestSupport

/// A blocking TCP client socket on 127.0.0.1 that never raises SIGPIPE.
final class RawConnection {
    private let descriptor: Int32

    init(port: UInt16) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw ChildProcessError("socket: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            close(descriptor)
            throw ChildProcessError("connect 127.0.0.1:\(port): errno \(errno)")
        }
        // No read waits longer than this, so a daemon that never answers fails the test.
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(descriptor) }

    /// Sends what the daemon accepts and returns how many bytes that was; a
    /// daemon that already closed the connection (EPIPE, ECONNRESET) ends
    /// the sending quietly.
    @discardableResult
    func send(_ bytes: [UInt8]) -> Int {
        var sent = 0
        while sent < bytes.count {
            let written = bytes[sent...].withUnsafeBytes {
                Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            guard written > 0 else { return sent }
            sent += written
        }
        return sent
    }

    /// Waits up to `milliseconds` for something to read (or the end).
    func waitReadable(milliseconds: Int32) -> Bool {
        var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, milliseconds) == 1
    }

    /// True while the daemon keeps the connection open: nothing to read and
    /// no end of stream, right now.
    var isOpen: Bool {
        var byte: UInt8 = 0
        let peeked = recv(descriptor, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
        return peeked < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)
    }

    func closeWrite() { shutdown(descriptor, Int32(SHUT_WR)) }

    /// Ends the connection both ways (the descriptor is closed on deinit).
    func hangUp() { shutdown(descriptor, Int32(SHUT_RDWR)) }

    /// Reads until `count` bytes arrived, the peer closed, or a read timed out.
    func receive(count: Int) -> [UInt8] {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while received.count < count {
            let read = buffer.withUnsafeMutableBytes {
                recv(descriptor, $0.baseAddress, min($0.count, count - received.count), 0)
            }
            guard read > 0 else { break }
            received += buffer[..<read]
        }
        return received
    }

    /// Reads until the peer closes (or resets) the connection or a read times out.
    func receiveUntilClosed() -> [UInt8] {
        closeWrite()
        return receive(count: Int.max)
    }
}
