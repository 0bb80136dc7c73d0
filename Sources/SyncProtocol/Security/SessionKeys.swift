import CSodium
import Synchronization

/// The two keys one handshake agreed: one per direction, fresh for every
/// connection and derived from ephemeral keys, so recording traffic and
/// later stealing the cluster key reveals nothing (forward secrecy).
///
/// ```swift
/// case .established(let keys):
///     connection.send(keys.sealer.seal(message).encoded())
///     let message = try keys.opener.open(receivedFrame)
/// ```
public struct SessionKeys: Sendable, Equatable, CustomStringConvertible {
    /// Seals what this node sends.
    public let sealer: FrameSealer
    /// Opens what the peer sends.
    public let opener: FrameOpener
    /// The handshake transcript T (public, 32 bytes): what a `hello`'s
    /// identity proof signs, so that it holds for this connection only.
    public let transcript: [UInt8]

    init(sending: SecretBytes, receiving: SecretBytes, transcript: [UInt8]) {
        sealer = FrameSealer(key: sending)
        opener = FrameOpener(key: receiving)
        self.transcript = transcript
    }

    /// Whether both directions use the same keys (compared in constant time).
    public static func == (lhs: SessionKeys, rhs: SessionKeys) -> Bool {
        lhs.sealer.key.isEqual(to: rhs.sealer.key) && lhs.opener.key.isEqual(to: rhs.opener.key)
    }

    public var description: String { "SessionKeys(…)" }
}

/// Encrypts and authenticates outgoing messages into `.sealed` frames.
///
/// ChaCha20-Poly1305 (IETF) with an implicit nonce: 4 zero bytes and the
/// frame's number in this direction as a little-endian UInt64, starting at 0;
/// the additional data is the frame's type byte. The number never travels, so
/// the peer accepts frames only in the order they were sealed, each once.
///
/// One sealer belongs to one connection. It is a class with its counter
/// behind a lock, so copies share the counter and a nonce is never used
/// twice; send frames in the order `seal` returned them.
public final class FrameSealer: Sendable {
    /// The largest plaintext that fits one frame: the frame limit less the
    /// type byte and the 16-byte tag.
    public static let maximumPlaintextSize = Frame.maximumSize - 1 - Sodium.tagSize

    let key: SecretBytes
    private let counter = Mutex<UInt64>(0)

    init(key: SecretBytes) {
        self.key = key
    }

    /// How many frames this sealer has sealed.
    public var sealedCount: UInt64 { counter.withLock { $0 } }

    /// The `.sealed` frame that carries `plaintext`.
    ///
    /// - Precondition: `plaintext.count <= FrameSealer.maximumPlaintextSize`.
    public func seal(_ plaintext: [UInt8]) -> Frame {
        precondition(
            plaintext.count <= FrameSealer.maximumPlaintextSize,
            "a sealed message of \(plaintext.count) bytes exceeds \(FrameSealer.maximumPlaintextSize)")
        return counter.withLock { counter in
            precondition(counter < UInt64.max, "2^64 frames sealed with one session key")
            var ciphertext = [UInt8](repeating: 0, count: plaintext.count + Sodium.tagSize)
            var length: UInt64 = 0
            let nonce = sealedFrameNonce(counter)
            let additional = [Frame.Kind.sealed.rawValue]
            let status = key.withUnsafeBytes { key in
                crypto_aead_chacha20poly1305_ietf_encrypt(
                    &ciphertext, &length, plaintext, UInt64(plaintext.count), additional, 1, nil, nonce,
                    key.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
            precondition(status == 0 && length == UInt64(ciphertext.count), "ChaCha20-Poly1305 sealing failed")
            counter += 1
            return Frame(type: .sealed, body: ciphertext)
        }
    }
}

/// Checks and decrypts incoming `.sealed` frames; the counterpart of
/// `FrameSealer`.
///
/// A frame opens only when it is the next one the peer sealed, unaltered:
/// tampered, replayed, reordered, truncated frames and frames of another
/// session fail authentication. A failed frame does not advance the
/// counter, but the connection should be closed anyway.
public final class FrameOpener: Sendable {
    let key: SecretBytes
    private let counter = Mutex<UInt64>(0)

    init(key: SecretBytes) {
        self.key = key
    }

    /// How many frames this opener has opened.
    public var openedCount: UInt64 { counter.withLock { $0 } }

    /// The plaintext of `frame`.
    ///
    /// - Throws: `SecurityError.notASealedFrame`,
    ///   `SecurityError.sealedFrameTruncated` or
    ///   `SecurityError.sealedFrameUnauthentic`.
    public func open(_ frame: Frame) throws -> [UInt8] {
        guard frame.type == .sealed else { throw SecurityError.notASealedFrame(frame.type) }
        let body = frame.body
        guard body.count >= Sodium.tagSize else { throw SecurityError.sealedFrameTruncated(size: body.count) }
        return try counter.withLock { counter throws(SecurityError) in
            var plaintext = [UInt8](repeating: 0, count: body.count - Sodium.tagSize)
            var length: UInt64 = 0
            let nonce = sealedFrameNonce(counter)
            let additional = [frame.type.rawValue]
            let status = key.withUnsafeBytes { key in
                crypto_aead_chacha20poly1305_ietf_decrypt(
                    &plaintext, &length, nil, body, UInt64(body.count), additional, 1, nonce,
                    key.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
            guard status == 0 else { throw SecurityError.sealedFrameUnauthentic(counter: counter) }
            counter += 1
            return plaintext
        }
    }
}

/// The implicit nonce of a direction's frame number `counter`.
private func sealedFrameNonce(_ counter: UInt64) -> [UInt8] {
    [0, 0, 0, 0] + (0..<8).map { UInt8(truncatingIfNeeded: counter >> ($0 * 8)) }
}
