import Foundation

/// Where a lab program finds the programs and the script it runs: beside
/// its own executable, where an install puts them, or on `PATH`; never in
/// the source tree it was built from.
///
/// ```swift
/// let tools = LabTools.running
/// let peerd = try tools.executable("peerd", builtBy: "swift build --product peerd")
/// let script = try tools.netlabScript(option: nil)
/// ```
public struct LabTools: Sendable {
    /// The folder of the running executable (a build's `.build/debug`, or an install's `bin`).
    public var directory: URL
    /// `PATH`, split.
    public var path: [String]
    /// `$PEERSYNC_NETLAB`, if set.
    public var netlabVariable: String?
    /// Whether a file is an executable (injected by tests).
    public var isExecutable: @Sendable (String) -> Bool

    public init(
        directory: URL, path: [String], netlabVariable: String?,
        isExecutable: @escaping @Sendable (String) -> Bool = { FileManager.default.isExecutableFile(atPath: $0) }
    ) {
        self.directory = directory
        self.path = path
        self.netlabVariable = netlabVariable
        self.isExecutable = isExecutable
    }

    /// The tools of this process: its executable's folder (where `/proc/self/exe` pointed when first asked,
    /// so that a rebuild replacing the file meanwhile changes nothing), its `PATH` and `$PEERSYNC_NETLAB`.
    public static var running: LabTools {
        let environment = ProcessInfo.processInfo.environment
        return LabTools(
            directory: executableDirectory, path: (environment["PATH"] ?? "").split(separator: ":").map(String.init),
            netlabVariable: environment["PEERSYNC_NETLAB"])
    }

    private static let executableDirectory: URL = {
        let link = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
        let path = link.map { $0.hasSuffix(" (deleted)") ? String($0.dropLast(10)) : $0 } ?? CommandLine.arguments[0]
        return URL(fileURLWithPath: path).resolvingSymlinksInPath().deletingLastPathComponent()
    }()

    /// The folder of `netlab.sh` in a build's products: SwiftPM copies the script there as `NetworkLab`'s
    /// resource.
    static let resourceFolder = "PeerSync_NetworkLab.resources"

    /// The executable `name` beside the running one, else on `PATH`; throws ``LabToolMissing`` naming
    /// `builtBy`, the command that makes it.
    public func executable(_ name: String, builtBy: String) throws -> String {
        let candidates = [directory.appendingPathComponent(name).path] + path.map { "\($0)/\(name)" }
        guard let found = candidates.first(where: isExecutable) else {
            throw LabToolMissing(
                "\(name) is neither beside \(directory.path) nor on PATH: \(builtBy) makes it; "
                    + "install it beside peerd-lab (docs/lab.md, \"Installing\")")
        }
        return found
    }

    /// The candidates for `netlab.sh`, in the order they are tried: `option` (`--netlab`), `$PEERSYNC_NETLAB`,
    /// beside the executable, the build's resource folder beside it, `../share/peersync/` of its folder, `PATH`.
    public func netlabCandidates(option: String?) -> [String] {
        if let option { return [option] }
        if let netlabVariable { return [netlabVariable] }
        return [
            directory.appendingPathComponent("netlab.sh").path,
            directory.appendingPathComponent(Self.resourceFolder).appendingPathComponent("netlab.sh").path,
            directory.deletingLastPathComponent().appendingPathComponent("share/peersync/netlab.sh").path,
        ] + path.map { "\($0)/netlab.sh" }
    }

    /// The first of ``netlabCandidates(option:)`` that is executable; throws ``LabToolMissing`` naming where it
    /// looked.
    public func netlabScript(option: String?) throws -> String {
        let candidates = netlabCandidates(option: option)
        guard let found = candidates.first(where: isExecutable) else {
            throw LabToolMissing(
                "no executable netlab.sh at \(candidates.joined(separator: ", ")): `swift build` puts one beside "
                    + "the executables; else give --netlab PATH or install it (docs/lab.md, \"Installing\")")
        }
        return found
    }
}

/// A program or script a lab needs is not where ``LabTools`` looks: the message names what makes it.
public struct LabToolMissing: Error, CustomStringConvertible {
    public var description: String

    public init(_ description: String) { self.description = description }
}
