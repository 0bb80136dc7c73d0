import CSodium

/// Key material in memory that only this object owns, wiped when the last
/// reference goes away.
///
/// Arrays copy themselves freely, so a secret kept in one could outlive every
/// wipe. `SecretBytes` allocates its own buffer, never hands it out beyond a
/// closure, and zeroes it with `sodium_memzero` in `deinit`. It is immutable
/// after `init`, which is why sharing it across threads is safe.
package final class SecretBytes: @unchecked Sendable {
    private let buffer: UnsafeMutableRawBufferPointer

    /// A secret of `count` bytes that `fill` writes.
    package init(count: Int, fill: (UnsafeMutableBufferPointer<UInt8>) -> Void) {
        buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: count, alignment: 16)
        fill(buffer.initializeMemory(as: UInt8.self, repeating: 0))
    }

    /// A copy of `bytes`. The caller's array is not wiped.
    package convenience init(copying bytes: some Collection<UInt8>) {
        self.init(count: bytes.count) { _ = $0.initialize(from: bytes) }
    }

    /// A new secret: the BLAKE2b-256 of `message` keyed with this secret.
    func derive(_ message: [UInt8]) -> SecretBytes {
        var digest = Sodium.hash(message, key: self)
        defer { Sodium.wipe(&digest) }
        return SecretBytes(copying: digest)
    }

    deinit {
        sodium_memzero(buffer.baseAddress, buffer.count)
        buffer.deallocate()
    }

    package var count: Int { buffer.count }

    package func withUnsafeBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        try body(UnsafeRawBufferPointer(buffer))
    }

    /// The bytes as an array, for the few places that must hand them out
    /// (writing the key file, the share code).
    var exposedBytes: [UInt8] { Array(UnsafeRawBufferPointer(buffer)) }

    /// Constant-time comparison.
    func isEqual(to other: SecretBytes) -> Bool {
        withUnsafeBytes { lhs in other.withUnsafeBytes { rhs in Sodium.constantTimeEqual(lhs, rhs) } }
    }
}
