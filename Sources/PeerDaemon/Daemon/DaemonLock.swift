import Foundation
import Glibc

/// One daemon per data directory: `peerd run` holds an exclusive `flock`
/// on `DIR/peerd.lock` (with its pid inside) for as long as it runs. The
/// kernel drops the lock when the process dies, however it dies.
final class DaemonLock: Sendable {
    let descriptor: Int32

    private init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    static func path(in directory: DataDirectory) -> String {
        (directory.path as NSString).appendingPathComponent("peerd.lock")
    }

    /// Takes the lock, or says which daemon holds it.
    static func acquire(_ directory: DataDirectory) throws -> DaemonLock {
        let path = path(in: directory)
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw CommandError.cannotWrite(path, errno: errno) }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let pid = (try? String(contentsOfFile: path, encoding: .utf8))?.trimmingCharacters(
                in: .whitespacesAndNewlines)
            close(descriptor)
            throw CommandError(
                "another peerd (pid \(pid.flatMap { $0.isEmpty ? nil : $0 } ?? "?")) is already running on "
                    + "\(directory.path); one daemon per data directory")
        }
        // The pid is the first thing a start writes: on a full disk (or a
        // failing one) it stops here, with the reason, before anything else.
        let pid = Array("\(getpid())\n".utf8)
        var failure = ftruncate(descriptor, 0) == 0 ? 0 : errno
        if failure == 0 { failure = pid.withUnsafeBytes { DataDirectory.writeAll($0, to: descriptor, at: 0) } }
        guard failure == 0 else {
            close(descriptor)
            throw CommandError.cannotWrite(path, errno: failure)
        }
        return DaemonLock(descriptor: descriptor)
    }

    /// Whether some process holds the lock now.
    static func isHeld(_ directory: DataDirectory) -> Bool {
        let descriptor = open(path(in: directory), O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        if flock(descriptor, LOCK_SH | LOCK_NB) == 0 {
            flock(descriptor, LOCK_UN)
            return false
        }
        return errno == EWOULDBLOCK
    }

    deinit {
        close(descriptor)
    }
}
