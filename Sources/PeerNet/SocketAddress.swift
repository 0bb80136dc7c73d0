import Glibc

/// A resolved IPv4 or IPv6 address and port.
public struct SocketAddress: Sendable, CustomStringConvertible {
    var family: Int32
    private var storage = sockaddr_storage()
    private var length: socklen_t

    func withSockaddr<T>(_ body: (UnsafePointer<sockaddr>, socklen_t) throws -> T) rethrows -> T {
        try withUnsafePointer(to: storage) { pointer in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { try body($0, length) }
        }
    }

    init(family: Int32, address: UnsafePointer<sockaddr>, length: socklen_t) {
        self.family = family
        self.length = length
        withUnsafeMutableBytes(of: &storage) { target in
            target.copyMemory(from: UnsafeRawBufferPointer(start: address, count: Int(length)))
        }
    }

    /// The address as numeric text and port, e.g. `127.0.0.1:4100`.
    public var description: String {
        var text = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        var service = [CChar](repeating: 0, count: Int(NI_MAXSERV))
        let result = withSockaddr { pointer, length in
            getnameinfo(
                pointer, length, &text, socklen_t(text.count), &service, socklen_t(service.count),
                NI_NUMERICHOST | NI_NUMERICSERV)
        }
        guard result == 0 else { return "?" }
        let host = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let port = String(decoding: service.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    /// `host` as a numeric address (no name lookup, so it never blocks), or
    /// `nil` when it is a name.
    public static func numeric(host: String, port: UInt16) -> SocketAddress? {
        try? lookUp(host: host, port: port, flags: AI_NUMERICHOST)
    }

    /// Resolves a numeric address or a host name (first result). A name
    /// lookup may block: off an event loop's thread.
    public static func resolve(host: String, port: UInt16) throws -> SocketAddress {
        try lookUp(host: host, port: port, flags: 0)
    }

    static func lookUp(host: String, port: UInt16, flags: Int32) throws -> SocketAddress {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = flags
        var results: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host.isEmpty ? nil : host, String(port), &hints, &results)
        guard status == 0, let first = results else {
            throw SocketError(operation: "resolve \(host)", code: status == EAI_SYSTEM ? errno : EHOSTUNREACH)
        }
        defer { freeaddrinfo(results) }
        return SocketAddress(
            family: first.pointee.ai_family, address: first.pointee.ai_addr, length: first.pointee.ai_addrlen)
    }
}

/// Resolves a numeric address or a host name (first result).
func resolve(host: String, port: UInt16, passive: Bool) throws -> SocketAddress {
    try SocketAddress.lookUp(host: host, port: port, flags: passive ? AI_PASSIVE : 0)
}
