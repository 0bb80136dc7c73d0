import ChildProcesses
import Foundation

/// The executables a benchmark starts: the one given, or one beside this executable.
enum Executable {
    /// This executable (`/proc/self/exe`, else `CommandLine.arguments[0]`).
    static var own: String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
            ?? URL(fileURLWithPath: CommandLine.arguments[0]).standardizedFileURL.path
    }

    /// `name` in the folder of this executable (`.build/debug/peerd` beside `.build/debug/peerd-bench`).
    static func beside(_ name: String) throws -> String {
        let path = URL(fileURLWithPath: own).deletingLastPathComponent().appendingPathComponent(name).path
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw ChildProcessError(
                "no \(name) at \(path): build it next to peerd-bench (`swift build --product \(name)`)")
        }
        return path
    }

    /// The absolute path of an executable given on the command line.
    static func checked(_ path: String) throws -> String {
        let absolute = URL(fileURLWithPath: path).standardizedFileURL.path
        guard FileManager.default.isExecutableFile(atPath: absolute) else {
            throw UsageError("\(path) is not an executable file")
        }
        return absolute
    }
}
