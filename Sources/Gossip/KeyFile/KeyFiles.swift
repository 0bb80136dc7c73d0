import Foundation
import SyncProtocol

/// The key file: exactly the 32 key bytes, mode 0600, never overwritten.
extension ClusterKey {
    /// Creates `path` with mode 0600 and writes the 32 key bytes to it,
    /// flushed to disk together with the directory entry.
    ///
    /// Refuses to replace a file (or symbolic link) already at `path`. When
    /// writing fails halfway the new file is removed again.
    ///
    /// - Throws: `KeyFileError.exists`, or `KeyFileError.io`.
    public func write(toFile path: String) throws {
        try SecretFile.write(secret, toFile: path)
    }

    /// Reads the key that `write(toFile:)` wrote.
    ///
    /// Refuses a file that group or others may access (fix: `chmod 600`), one
    /// that is not a regular file, and one that does not hold exactly 32
    /// bytes.
    ///
    /// - Throws: `KeyFileError.missing`, `.tooOpen`, `.wrongSize`,
    ///   `.notRegular` or `.io`.
    public static func read(fromFile path: String) throws -> ClusterKey {
        ClusterKey(secret: try SecretFile.read(fromFile: path, size: size))
    }
}

/// An identity or admin key file: the 32-byte seed, in the cluster key's file format.
extension SigningKey {
    /// Creates `path` (mode 0600) with the seed; refuses to replace a file.
    ///
    /// - Throws: `KeyFileError.exists`, or `KeyFileError.io`.
    public func write(toFile path: String) throws {
        try SecretFile.write(seed, toFile: path)
    }

    /// Reads a key that `write(toFile:)` wrote, with the cluster key file's checks.
    public static func read(fromFile path: String) throws -> SigningKey {
        SigningKey(seed: try SecretFile.read(fromFile: path, size: size))
    }

    /// The key in `path`, made there (mode 0600) when there is none yet.
    public static func readOrCreate(atPath path: String) throws -> SigningKey {
        do {
            return try read(fromFile: path)
        } catch KeyFileError.missing {
            let key = generate()
            do {
                try key.write(toFile: path)
            } catch KeyFileError.exists {
                return try read(fromFile: path)  // another process made it first
            }
            return key
        }
    }
}

/// A file that holds exactly one secret's bytes, mode 0600.
enum SecretFile {
    static func write(_ secret: SecretBytes, toFile path: String) throws {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw errno == EEXIST
                ? KeyFileError.exists(path: path)
                : KeyFileError.io(path: path, operation: "create", errno: errno)
        }
        var written = false
        defer {
            close(descriptor)
            if !written { unlink(path) }
        }
        // The umask may have taken bits away; the mode must be exactly 0600.
        guard fchmod(descriptor, 0o600) == 0 else {
            throw KeyFileError.io(path: path, operation: "set the mode of", errno: errno)
        }
        try secret.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let count = Foundation.write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { throw KeyFileError.io(path: path, operation: "write", errno: errno) }
                offset += count
            }
        }
        guard fsync(descriptor) == 0 else {
            throw KeyFileError.io(path: path, operation: "flush", errno: errno)
        }
        written = true
        Self.flushDirectory(containing: path)
    }

    static func read(fromFile path: String, size: Int) throws -> SecretBytes {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw errno == ENOENT
                ? KeyFileError.missing(path: path)
                : KeyFileError.io(path: path, operation: "open", errno: errno)
        }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else {
            throw KeyFileError.io(path: path, operation: "inspect", errno: errno)
        }
        guard info.st_mode & S_IFMT == S_IFREG else { throw KeyFileError.notRegular(path: path) }
        guard info.st_mode & 0o077 == 0 else {
            throw KeyFileError.tooOpen(path: path, mode: UInt32(info.st_mode & 0o777))
        }
        guard info.st_size == size else { throw KeyFileError.wrongSize(path: path, size: Int(info.st_size)) }
        var readError: Int32 = 0
        var total = 0
        let secret = SecretBytes(count: size) { buffer in
            while total < buffer.count {
                let count = Foundation.read(descriptor, buffer.baseAddress! + total, buffer.count - total)
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else {
                    readError = count < 0 ? errno : 0
                    return
                }
                total += count
            }
        }
        guard readError == 0 else { throw KeyFileError.io(path: path, operation: "read", errno: readError) }
        guard total == size else { throw KeyFileError.wrongSize(path: path, size: total) }
        return secret
    }

    /// Makes the new directory entry durable; best effort, as a failure here
    /// leaves a complete key file that a crash might merely forget.
    private static func flushDirectory(containing path: String) {
        let directory = (path as NSString).deletingLastPathComponent
        let descriptor = open(directory.isEmpty ? "." : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        _ = fsync(descriptor)
        close(descriptor)
    }
}
