import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A non-blocking client TCP socket to a port on 127.0.0.1: what the shell
/// benchmark opens to a daemon from outside, as any stranger would. Every
/// call returns at once; `wait` polls with a deadline. Closes its
/// descriptor when released.
///
/// ```swift
/// let socket = try ProbeSocket.connect(port: 4100, seconds: 2)
/// _ = socket.send(Array("hello".utf8)[...])
/// ```
///
/// Not `Sendable`: one thread owns each socket.
final class ProbeSocket {
    /// The kernel's descriptor, for `poll`.
    let descriptor: Int32

    /// Starts connecting to `127.0.0.1:port` without waiting; `connectError`
    /// tells the outcome once `wait(for: POLLOUT ...)` reports the socket writable.
    init(startingConnectTo port: UInt16) throws {
        let created = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard created >= 0 else { throw ProbeError.system("socket", errno) }
        descriptor = created
        var one: Int32 = 1
        setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let started = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        if started == -1 && errno != EINPROGRESS {
            let code = errno
            close(descriptor)
            throw ProbeError.system("connect 127.0.0.1:\(port)", code)
        }
    }

    deinit { close(descriptor) }

    /// Connects to `127.0.0.1:port`, giving up after `seconds`.
    static func connect(port: UInt16, seconds: Double) throws -> ProbeSocket {
        let socket = try ProbeSocket(startingConnectTo: port)
        let ready = socket.wait(for: Int16(POLLOUT), until: .now + .milliseconds(Int(seconds * 1000)))
        guard ready != 0 else { throw ProbeError.timedOut("connect to 127.0.0.1:\(port) after \(seconds) s") }
        let failure = socket.connectError
        guard failure == 0 else { throw ProbeError.system("connect 127.0.0.1:\(port)", failure) }
        return socket
    }

    /// `SO_ERROR`: 0 once a started connect succeeded, else why it failed.
    var connectError: Int32 {
        var failure: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(descriptor, SOL_SOCKET, SO_ERROR, &failure, &length)
        return failure
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

    /// Sends what the kernel takes now of `bytes` (never raises SIGPIPE).
    func send(_ bytes: ArraySlice<UInt8>) -> Transfer {
        let count = bytes.withUnsafeBytes { buffer in
            retryingInterrupts { Glibc.send(descriptor, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL)) }
        }
        return Transfer(count)
    }

    /// Reads what has arrived, at most `buffer.count` bytes.
    func receive(into buffer: inout [UInt8]) -> Transfer {
        let count = buffer.withUnsafeMutableBytes { raw in
            retryingInterrupts { recv(descriptor, raw.baseAddress, raw.count, 0) }
        }
        return Transfer(count)
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
}

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

    init(_ result: Int) {
        if result > 0 {
            self = .moved(result)
        } else if result == 0 {
            self = .ended
        } else if errno == EAGAIN || errno == EWOULDBLOCK {
            self = .wouldBlock
        } else {
            self = .failed(errno)
        }
    }
}

/// Runs a system call again while it fails with `EINTR`.
func retryingInterrupts(_ call: () -> Int) -> Int {
    while true {
        let result = call()
        if result == -1 && errno == EINTR { continue }
        return result
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
