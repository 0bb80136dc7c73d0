import Glibc

/// A resolved IPv4 or IPv6 address.
struct SocketAddress {
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
}

/// Resolves a numeric address or a host name (first result).
func resolve(host: String, port: UInt16, passive: Bool) throws -> SocketAddress {
    var hints = addrinfo()
    hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
    hints.ai_flags = passive ? AI_PASSIVE : 0
    var results: UnsafeMutablePointer<addrinfo>?
    let status = getaddrinfo(host.isEmpty ? nil : host, String(port), &hints, &results)
    guard status == 0, let first = results else {
        throw SocketError(operation: "resolve \(host)", code: status == EAI_SYSTEM ? errno : EHOSTUNREACH)
    }
    defer { freeaddrinfo(results) }
    return SocketAddress(
        family: first.pointee.ai_family, address: first.pointee.ai_addr, length: first.pointee.ai_addrlen)
}
