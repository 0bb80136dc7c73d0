import Foundation

/// What went wrong with a cluster key, a share code, a key file or a sealed
/// frame. Every message says what happened and, where a person can fix it,
/// how.
public enum SecurityError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Key material of the wrong length.
    case invalidKeyLength(Int)
    /// The text is not a share code at all (wrong prefix, length or characters).
    case notAClusterCode(String)
    /// The code has the right shape but its checksum does not match.
    case clusterCodeMistyped
    /// No key file at the path.
    case keyFileMissing(path: String)
    /// A key file is already there; writing never replaces one.
    case keyFileExists(path: String)
    /// The key file does not hold exactly 32 bytes.
    case keyFileWrongSize(path: String, size: Int)
    /// Group or others may access the key file.
    case keyFileTooOpen(path: String, mode: UInt32)
    /// The key file path is not a regular file.
    case keyFileNotRegular(path: String)
    /// A system call on the key file failed.
    case keyFileIO(path: String, operation: String, errno: Int32)
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
        case .keyFileMissing(let path):
            "no cluster key file at \(path)"
        case .keyFileExists(let path):
            "a cluster key file already exists at \(path); refusing to overwrite it"
        case .keyFileWrongSize(let path, let size):
            "cluster key file \(path) holds \(size) bytes, not 32; it is damaged or not a cluster key"
        case .keyFileTooOpen(let path, let mode):
            "cluster key file \(path) is accessible by group or others (mode 0\(String(mode, radix: 8))); "
                + "run `chmod 600 \(path)`"
        case .keyFileNotRegular(let path):
            "cluster key file \(path) is not a regular file"
        case .keyFileIO(let path, let operation, let code):
            "cannot \(operation) cluster key file \(path): \(String(cString: strerror(code)))"
        case .notASealedFrame(let kind):
            "expected a sealed frame, got a \(kind) frame"
        case .sealedFrameTruncated(let size):
            "sealed frame of \(size) bytes is shorter than its 16-byte tag: truncated"
        case .sealedFrameUnauthentic(let counter):
            "sealed frame #\(counter) failed authentication: it was tampered with, replayed, reordered or truncated"
        }
    }
}
