import CLinux
import Glibc

/// The calls an event loop makes: none of them ever blocks. Each returns
/// `nil` where a blocking call would have waited (`EAGAIN`).
extension Socket {
    /// Makes every later call on the socket return at once.
    public func setNonBlocking() {
        let flags = fcntl(descriptor, F_GETFL)
        _ = fcntl(descriptor, F_SETFL, flags | O_NONBLOCK)
    }

    /// The next waiting connection, non-blocking and close-on-exec; `nil`
    /// when none waits. Throws on anything else (`EMFILE`: out of
    /// descriptors), without losing the connection waiting in the backlog.
    public func acceptWaiting() throws -> Socket? {
        while true {
            let accepted = peersync_accept(descriptor, Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue))
            if accepted >= 0 {
                let socket = Socket(descriptor: accepted)
                socket.configureStream()
                return socket
            }
            switch errno {
            case EINTR, ECONNABORTED: continue
            case EAGAIN: return nil
            case let code: throw SocketError(operation: "accept", code: code)
            }
        }
    }

    /// Starts connecting to a numeric address (`127.0.0.1`, `::1`): a
    /// non-blocking socket whose writability says the attempt is over
    /// (then `connectionError` tells how it went). Host names need
    /// `resolve`, which may block, first.
    public static func startConnecting(to address: SocketAddress) throws -> Socket {
        let socket = Socket(
            descriptor: try systemCall("socket") {
                Glibc.socket(
                    address.family,
                    Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            })
        let started = address.withSockaddr { pointer, length in Glibc.connect(socket.descriptor, pointer, length) }
        if started == -1 && errno != EINPROGRESS {
            throw SocketError(operation: "connect \(address)", code: errno)
        }
        socket.configureStream()
        return socket
    }

    /// After a non-blocking connect became writable: `nil` when connected,
    /// else why it failed.
    public var connectionError: SocketError? {
        var failure: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(descriptor, SOL_SOCKET, SO_ERROR, &failure, &length)
        return failure == 0 ? nil : SocketError(operation: "connect", code: failure)
    }

    /// Reads what has arrived into `buffer`: the byte count (0 at the end of
    /// the stream), or `nil` when nothing has.
    public func receiveAvailable(into buffer: UnsafeMutableRawBufferPointer) throws -> Int? {
        while true {
            let count = recv(descriptor, buffer.baseAddress, buffer.count, 0)
            if count >= 0 { return count }
            switch errno {
            case EINTR: continue
            case EAGAIN: return nil
            case let code: throw SocketError(operation: "recv", code: code)
            }
        }
    }

    /// Writes what the kernel takes now: the byte count, or `nil` when it takes nothing.
    public func sendAvailable(_ bytes: UnsafeRawBufferPointer) throws -> Int? {
        while true {
            let count = Glibc.send(descriptor, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL))
            if count >= 0 { return count }
            switch errno {
            case EINTR: continue
            case EAGAIN: return nil
            case let code: throw SocketError(operation: "send", code: code)
            }
        }
    }
}
