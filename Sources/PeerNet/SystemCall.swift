import Glibc

/// A failed system call on a socket, with the `errno` text.
public struct SocketError: Error, CustomStringConvertible, Sendable {
    public var operation: String
    public var code: Int32

    public var description: String { "\(operation): \(String(cString: strerror(code)))" }
}

/// Runs a system call, retrying on `EINTR`, and throws `SocketError` on -1.
/// All errno handling of the transport goes through here.
@discardableResult
func systemCall<T: BinaryInteger>(_ operation: String, _ call: () -> T) throws -> T {
    while true {
        let result = call()
        if result != -1 { return result }
        let code = errno
        if code == EINTR { continue }
        throw SocketError(operation: operation, code: code)
    }
}
