import CSodium

/// SHA-256 (FIPS 180-4), incremental, computed by libsodium
/// (`crypto_hash_sha256_init`, `_update`, `_final`).
///
/// ```swift
/// var hash = SHA256()
/// hash.update("abc")
/// hash.finalizeHex()  // "ba7816bf..."
/// ```
///
/// A value type: a copy carries on from where the original was, on its own.
public struct SHA256: Sendable {
    /// The size of a digest in bytes.
    public static let digestSize = Int(crypto_hash_sha256_BYTES)

    private var state = crypto_hash_sha256_state()

    public init() {
        precondition(Self.sodiumIsReady, "libsodium failed to initialise (sodium_init)")
        crypto_hash_sha256_init(&state)
    }

    /// Runs `sodium_init` once, before the first hash: Swift initialises a
    /// static property lazily and exactly once, whatever the threads, and
    /// `sodium_init` itself tolerates the other modules calling it too.
    private static let sodiumIsReady: Bool = sodium_init() >= 0

    /// Adds the bytes in `buffer`.
    public mutating func update(_ buffer: UnsafeRawBufferPointer) {
        guard let base = buffer.baseAddress, !buffer.isEmpty else { return }
        crypto_hash_sha256_update(&state, base.assumingMemoryBound(to: UInt8.self), UInt64(buffer.count))
    }

    /// Adds bytes to the hash; contiguous collections are read in place.
    public mutating func update<Bytes: Sequence>(_ bytes: Bytes) where Bytes.Element == UInt8 {
        let done: Void? = bytes.withContiguousStorageIfAvailable { update(UnsafeRawBufferPointer($0)) }
        if done == nil { Array(bytes).withUnsafeBytes { update($0) } }
    }

    /// Adds the UTF-8 bytes of `text`.
    public mutating func update(_ text: String) {
        var text = text
        text.withUTF8 { update(UnsafeRawBufferPointer($0)) }
    }

    /// The digest as 32 bytes. Afterwards the value starts over as a new,
    /// empty hash.
    public mutating func finalize() -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: Self.digestSize)
        digest.withUnsafeMutableBufferPointer { _ = crypto_hash_sha256_final(&state, $0.baseAddress!) }
        crypto_hash_sha256_init(&state)
        return digest
    }

    /// The digest as 64 lowercase hex digits; see ``finalize()``.
    public mutating func finalizeHex() -> String { Hex.string(finalize()) }
}
