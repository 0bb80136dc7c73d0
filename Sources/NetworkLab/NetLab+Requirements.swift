import ChildProcesses
import Foundation

extension NetLab {
    /// Why a lab cannot run here, or nil: it needs root, the tools `netlab.sh` runs, `ip netns`,
    /// the script, and `executables` (paths of programs the lab will run in its hosts).
    public static func unavailableReason(script: String = defaultScript, executables: [String]) -> String? {
        guard geteuid() == 0 else { return "a lab of network namespaces needs root" }
        for tool in ["ip", "nsenter", "unshare", "setsid", "dbus-daemon", "avahi-daemon", "avahi-browse"]
        where which(tool) == nil {
            return "network namespaces need \(tool) (packages iproute2 util-linux dbus avahi-daemon avahi-utils)"
        }
        guard let ip = which("ip"), (try? ChildProcess.run(URL(fileURLWithPath: ip), ["netns", "list"]))?.status == 0
        else { return "`ip netns` is unavailable here" }
        guard FileManager.default.isExecutableFile(atPath: script) else { return "\(script) is missing" }
        for executable in executables where !FileManager.default.isExecutableFile(atPath: executable) {
            return "\(executable) is missing: build it first (`swift build` builds every executable)"
        }
        return nil
    }

    /// `tool` on `PATH` or in the system folders, or nil.
    private static func which(_ tool: String) -> String? {
        let path = (ProcessInfo.processInfo.environment["PATH"] ?? "") + ":/usr/sbin:/sbin:/usr/bin:/bin"
        return path.split(separator: ":").map { "\($0)/\(tool)" }.first {
            FileManager.default.isExecutableFile(atPath: $0)
        }
    }
}
