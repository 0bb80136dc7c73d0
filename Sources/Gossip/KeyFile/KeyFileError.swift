import Glibc

/// What went wrong reading or writing a key file (`cluster.key`, `identity.key`, an admin key). Every message says
/// what happened and, where a person can fix it, how.
public enum KeyFileError: Error, Equatable, Sendable, CustomStringConvertible {
    /// No key file at the path.
    case missing(path: String)
    /// A key file is already there; writing never replaces one.
    case exists(path: String)
    /// The key file does not hold exactly 32 bytes.
    case wrongSize(path: String, size: Int)
    /// Group or others may access the key file.
    case tooOpen(path: String, mode: UInt32)
    /// The key file path is not a regular file.
    case notRegular(path: String)
    /// A system call on the key file failed.
    case io(path: String, operation: String, errno: Int32)

    public var description: String {
        switch self {
        case .missing(let path):
            "no key file at \(path)"
        case .exists(let path):
            "a key file already exists at \(path); refusing to overwrite it"
        case .wrongSize(let path, let size):
            "key file \(path) holds \(size) bytes, not 32; it is damaged or not a key file"
        case .tooOpen(let path, let mode):
            "key file \(path) is accessible by group or others (mode 0\(String(mode, radix: 8))); "
                + "run `chmod 600 \(path)`"
        case .notRegular(let path):
            "key file \(path) is not a regular file"
        case .io(let path, let operation, let code):
            "cannot \(operation) key file \(path): \(String(cString: strerror(code)))"
        }
    }
}
