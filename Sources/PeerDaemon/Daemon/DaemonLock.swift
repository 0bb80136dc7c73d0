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
        guard descriptor >= 0 else {
            throw CommandError("cannot open \(path): \(String(cString: strerror(errno)))")
        }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let pid = (try? String(contentsOfFile: path, encoding: .utf8))?.trimmingCharacters(
                in: .whitespacesAndNewlines)
            close(descriptor)
            throw CommandError(
                "another peerd (pid \(pid.flatMap { $0.isEmpty ? nil : $0 } ?? "?")) is already running on "
                    + "\(directory.path); one daemon per data directory")
        }
        let pid = "\(getpid())\n"
        _ = ftruncate(descriptor, 0)
        _ = pid.withCString { pwrite(descriptor, $0, strlen($0), 0) }
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
