import Foundation
import TestSupport

/// A real file system of 2 MiB (a tmpfs) mounted inside a test's temporary
/// directory, to fill up for real; unmounted when the last reference goes.
/// Mounting needs root (or CAP_SYS_ADMIN): `unavailableReason` says why not.
final class SmallDisk {
    let path: String

    init(in temp: TemporaryDirectory, name: String = "disk", size: String = "2m") throws {
        path = temp.path(name)
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        let mounted = try Executables.runSystem("mount", ["-t", "tmpfs", "-o", "size=\(size)", "tmpfs", path])
        guard mounted.status == 0 else { throw ChildProcessError("cannot mount a tmpfs on \(path): \(mounted)") }
    }

    deinit {
        // Lazily, so that a child still holding a file open cannot keep it mounted.
        _ = try? Executables.runSystem("umount", ["-l", path])
    }

    /// Fills every free block with one file, as `dd` does until the disk is full.
    func fill() throws {
        let filled = try Executables.runSystem("dd", ["if=/dev/zero", "of=\(path)/fill", "bs=4k"])
        guard filled.stderr.contains("No space left on device") else {
            throw ChildProcessError("dd did not fill \(path): \(filled)")
        }
    }

    /// Removes the file `fill()` wrote.
    func free() throws {
        try FileManager.default.removeItem(atPath: path + "/fill")
    }

    /// Why a tmpfs cannot be mounted here, or nil when it can (tried once).
    static let unavailableReason: String? = {
        guard getuid() == 0 else { return "mounting a tmpfs needs root; run the tests as root to fill a real disk" }
        guard let temp = try? TemporaryDirectory() else { return "no temporary directory" }
        do {
            _ = try SmallDisk(in: temp, name: "probe")
            return nil
        } catch {
            return "mount -t tmpfs is not permitted here (\(error))"
        }
    }()
}
