/// What went wrong with a cluster key, a share code or a sealed frame. Every message says what happened and, where a person can fix it,
/// how.
public enum SecurityError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Key material of the wrong length.
    case invalidKeyLength(Int)
    /// The text is not a share code at all (wrong prefix, length or characters).
    case notAClusterCode(String)
    /// The code has the right shape but its checksum does not match.
    case clusterCodeMistyped
    /// `FrameOpener.open` was given a frame that is not `.sealed`.
    case notASealedFrame(Frame.Kind)
    /// A sealed frame too short to hold its authentication tag.
    case sealedFrameTruncated(size: Int)
    /// A sealed frame failed authentication: tampered, replayed, reordered,
    /// truncated, or sealed with another session's key.
    case sealedFrameUnauthentic(counter: UInt64)

    public var description: String {
        switch self {
        case .invalidKeyLength(let count):
            "a cluster key is exactly 32 bytes, not \(count)"
        case .notAClusterCode(let detail):
            "not a PeerSync cluster code: \(detail)"
        case .clusterCodeMistyped:
            "checksum mismatch: the code was mistyped; copy it again from `peerd cluster-code` on a cluster member"
        case .notASealedFrame(let kind):
            "expected a sealed frame, got a \(kind) frame"
        case .sealedFrameTruncated(let size):
            "sealed frame of \(size) bytes is shorter than its 16-byte tag: truncated"
        case .sealedFrameUnauthentic(let counter):
            "sealed frame #\(counter) failed authentication: it was tampered with, replayed, reordered or truncated"
        }
    }
}
