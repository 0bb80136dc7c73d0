import ChildProcesses
import Foundation

/// The hosts of earlier `peerd-lab` runs that ended without taking them
/// down (killed with SIGKILL, crashed): each run notes its namespace
/// prefix, its pid and its netlab state directory in
/// `/run/peerd-lab/PREFIX` while its hosts are up, and the next run takes
/// down every noted lab whose process is gone.
enum LabLeftovers {
    static let directory = "/run/peerd-lab"

    /// Notes that this process runs the lab `prefix` with its netlab state in `state`.
    static func note(prefix: String, state: String) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try Data("\(getpid())\n\(state)\n".utf8).write(to: URL(fileURLWithPath: "\(directory)/\(prefix)"))
    }

    /// Forgets the lab `prefix` once it is down.
    static func forget(prefix: String) { try? FileManager.default.removeItem(atPath: "\(directory)/\(prefix)") }

    /// Takes down (`netlab.sh down`) every noted lab whose `peerd-lab` no longer runs, and removes the work
    /// directory it made in the temporary directory; returns their prefixes.
    static func sweep(script: String) async -> [String] {
        let noted = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        var swept: [String] = []
        for prefix in noted.sorted() {
            let file = "\(directory)/\(prefix)"
            let lines = ((try? String(contentsOfFile: file, encoding: .utf8)) ?? "").split(separator: "\n")
            guard lines.count == 2, let pid = Int32(lines[0]) else {
                forget(prefix: prefix)
                continue
            }
            guard !isLab(pid) else { continue }
            let result = try? await ChildProcess.run(
                URL(fileURLWithPath: script), ["down"], environment: ["NETLAB_PREFIX": prefix, "LAB": String(lines[1])])
            guard result?.status == 0 else { continue }
            forget(prefix: prefix)
            swept.append(prefix)
            // The work directory a lab made for itself in the temporary directory (not a --keep one).
            let work = URL(fileURLWithPath: String(lines[1])).deletingLastPathComponent()
            if work.lastPathComponent == "netlab-\(prefix)",
                work.deletingLastPathComponent().standardizedFileURL.path
                    == FileManager.default.temporaryDirectory.standardizedFileURL.path
            {
                try? FileManager.default.removeItem(at: work)
            }
        }
        return swept
    }

    /// Whether `pid` is a running `peerd-lab` (the lab that noted itself).
    private static func isLab(_ pid: Int32) -> Bool {
        let comm = (try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8)) ?? ""
        return comm.trimmingCharacters(in: .whitespacesAndNewlines) == "peerd-lab"
    }
}
