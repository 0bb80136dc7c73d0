import CLinux
import Glibc

/// A TCP socket. Closes its descriptor when released. Blocking calls on it
/// run on the transport's own threads, never on Swift's cooperative pool.
///
/// `@unchecked Sendable`: the descriptor is an integer the kernel guards;
/// one thread reads, one serial queue writes, and `shutdown` from any
/// thread is the documented way to wake a blocked `recv` or `accept`.
public final class Socket: @unchecked Sendable {
    public let descriptor: Int32

    init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    deinit {
        close(descriptor)
    }

    /// Listens on `host:port` (port 0: the kernel picks one; see `localPort`).
    public static func listen(host: String, port: UInt16, backlog: Int32 = 128) throws -> Socket {
        let address = try resolve(host: host, port: port, passive: true)
        let socket = Socket(
            descriptor: try systemCall("socket") {
                Glibc.socket(address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            })
        var one: Int32 = 1
        setsockopt(socket.descriptor, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        _ = try address.withSockaddr { pointer, length in
            try systemCall("bind \(host):\(port)") { bind(socket.descriptor, pointer, length) }
        }
        try systemCall("listen") { Glibc.listen(socket.descriptor, backlog) }
        return socket
    }

    /// Connects to `host:port`, giving up after `timeoutMs`; a blocking socket.
    public static func connect(host: String, port: UInt16, timeoutMs: Int32 = 5_000) throws -> Socket {
        let socket = try startConnecting(to: try resolve(host: host, port: port, passive: false))
        var poller = pollfd(fd: socket.descriptor, events: Int16(POLLOUT), revents: 0)
        let ready = try systemCall("poll") { poll(&poller, 1, timeoutMs) }
        guard ready == 1 else { throw SocketError(operation: "connect \(host):\(port)", code: ETIMEDOUT) }
        if let failure = socket.connectionError {
            throw SocketError(operation: "connect \(host):\(port)", code: failure.code)
        }
        let flags = fcntl(socket.descriptor, F_GETFL)
        _ = fcntl(socket.descriptor, F_SETFL, flags & ~Int32(O_NONBLOCK))
        return socket
    }

    /// Waits for the next connection; throws once the socket is shut down.
    public func accept() throws -> Socket {
        let descriptor = try systemCall("accept") { Glibc.accept(self.descriptor, nil, nil) }
        let socket = Socket(descriptor: descriptor)
        socket.configureStream()
        return socket
    }

    /// The port the socket is bound to.
    public var localPort: UInt16 {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        return withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin_port) }
        }
    }

    /// The peer's IP address as text.
    public var remoteHost: String? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let status = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(descriptor, $0, &length) }
        }
        guard status == 0 else { return nil }
        var text = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        let result = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                getnameinfo($0, length, &text, socklen_t(text.count), nil, 0, NI_NUMERICHOST)
            }
        }
        return result == 0
            ? String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : nil
    }

    /// Sends every byte, blocking as needed.
    public func send(_ bytes: [UInt8]) throws {
        var sent = 0
        while sent < bytes.count {
            let count = try bytes.withUnsafeBytes { buffer in
                try systemCall("send") {
                    Glibc.send(descriptor, buffer.baseAddress! + sent, buffer.count - sent, Int32(MSG_NOSIGNAL))
                }
            }
            sent += count
        }
    }

    /// Up to `maximum` bytes; empty at end of stream.
    public func receive(maximum: Int = 64 << 10) throws -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: maximum)
        let count = try buffer.withUnsafeMutableBytes { raw in
            try systemCall("recv") { recv(descriptor, raw.baseAddress!, maximum, 0) }
        }
        buffer.removeSubrange(count...)
        return buffer
    }

    /// Bounds how long a `receive` may block (0: forever).
    public func setReceiveTimeout(milliseconds: Int) {
        var time = timeval(tv_sec: milliseconds / 1000, tv_usec: (milliseconds % 1000) * 1000)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Which directions `shutdown` ends.
    public enum Direction: Sendable {
        /// Our sending: the peer reads the end of the stream after what was sent.
        case write
        case both
    }

    /// Ends the connection in `direction`; with `.both`, wakes any thread
    /// blocked on the socket, and later calls fail.
    public func shutdown(_ direction: Direction = .both) {
        _ = Glibc.shutdown(descriptor, Int32(direction == .write ? SHUT_WR : SHUT_RDWR))
    }

    func configureStream() {
        var one: Int32 = 1
        setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }
}
