import Foundation

/// Real storage failures, made on purpose: a damaged page in a closed
/// database file, and writes that the kernel fails.
///
/// ```swift
/// var random = SplitMix64(seed: 7)
/// try FileDamage.overwritePage(of: path, at: try FileDamage.middlePage(of: path), using: &random)
/// try FileDamage.whileDescriptor(of: path + "-wal", refersTo: "/dev/full", flags: O_WRONLY) {
///     #expect(throws: SQLiteError.self) { try log.append(event) }
/// }
/// ```
public enum FileDamage {
    /// Overwrites the 4 KiB at `offset` of `path` with bytes from `random`
    /// (a seeded generator makes the damage the same in every run), as a
    /// failing disk or a stray write would.
    public static func overwritePage(
        of path: String, at offset: UInt64, using random: inout some RandomNumberGenerator
    ) throws {
        let garbage = Data((0..<4096).map { _ in UInt8.random(in: 0...255, using: &random) })
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: path))
        defer { try? handle.close() }
        try handle.seek(toOffset: offset)
        try handle.write(contentsOf: garbage)
        try handle.synchronize()
    }

    /// The offset of the 4 KiB page in the middle of the file.
    public static func middlePage(of path: String) throws -> UInt64 {
        let size = try FileManager.default.attributesOfItem(atPath: path)[.size] as? UInt64 ?? 0
        return size / 2 / 4096 * 4096
    }

    /// Runs `body` while this process's open descriptor of `path` refers to
    /// `substitute` instead (`dup2`), then puts the file back. SQLite's
    /// writes to `path` then fail in the kernel as a real device fails
    /// them: `/dev/full` answers `ENOSPC`; a file opened read-only, `EBADF`
    /// (an I/O error to SQLite).
    public static func whileDescriptor(
        of path: String, refersTo substitute: String, flags: Int32, _ body: () throws -> Void
    ) throws {
        let descriptor = try openDescriptor(of: path)
        let saved = dup(descriptor)
        let replacement = open(substitute, flags | O_CLOEXEC)
        guard saved >= 0, replacement >= 0 else { throw FileDamageError("cannot open \(substitute)") }
        defer {
            dup2(saved, descriptor)
            close(saved)
            close(replacement)
        }
        guard dup2(replacement, descriptor) >= 0 else { throw FileDamageError("dup2 failed: errno \(errno)") }
        try body()
    }

    /// The one descriptor of this process that is open on `path`.
    private static func openDescriptor(of path: String) throws -> Int32 {
        let target = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
        let found = try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").compactMap { name in
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(name)")) == target
                ? Int32(name) : nil
        }
        guard found.count == 1, let descriptor = found.first else {
            throw FileDamageError("expected one open descriptor of \(target), found \(found)")
        }
        return descriptor
    }
}

/// A damage could not be made: a file to open, a descriptor to find.
public struct FileDamageError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
