import Foundation
import Testing

/// The module boundaries of docs/architecture.md, checked on the sources:
/// the protocol target is pure, and the small shared targets stay small.
@Suite struct TargetBoundaryTests {
    /// The repository's root, from this file's path.
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// Every Swift source of `target` with its text.
    static func sources(of target: String) throws -> [(name: String, text: String)] {
        let directory = root.appendingPathComponent("Sources/\(target)")
        let files = FileManager.default.enumerator(atPath: directory.path)?.compactMap { $0 as? String } ?? []
        return try files.filter { $0.hasSuffix(".swift") }.sorted().map { file in
            (file, try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8))
        }
    }

    /// The modules a file imports.
    static func imports(_ text: String) -> Set<String> {
        Set(
            text.split(separator: "\n").compactMap { line in
                line.hasPrefix("import ") ? String(line.dropFirst("import ".count)) : nil
            })
    }

    @Test func theProtocolTargetUsesNoSocketsClocksOrThreads() throws {
        let files = try Self.sources(of: "SyncProtocol")
        try #require(files.count > 20)
        for (name, text) in files {
            let imported = Self.imports(text)
            #expect(
                imported.isSubset(of: ["CSodium", "CZstd", "Foundation", "PeerNet", "Replica", "Synchronization"]),
                "\(name)")
            for forbidden in ["Thread", "DispatchQueue", "NSLock", "NSCondition", "Date()", "Socket", "EventLoop"] {
                #expect(!text.contains(forbidden), "\(name) uses \(forbidden)")
            }
        }
    }

    @Test func daemonClientAndDiscoveryNeedNeitherGossipNorItsLibraries() throws {
        for target in ["DaemonClient", "Discovery", "PeerNet"] {
            for (name, text) in try Self.sources(of: target) {
                let imported = Self.imports(text)
                #expect(
                    imported.isDisjoint(with: ["Gossip", "SyncProtocol", "Replica", "CSodium", "CSQLite"]),
                    "\(target)/\(name)")
            }
        }
    }

    @Test func peerdImportsNoLabModule() throws {
        let files = try Self.sources(of: "PeerDaemon")
        try #require(files.count > 20)
        for (name, text) in files {
            let imported = Self.imports(text)
            #expect(
                imported.isDisjoint(with: ["ConvergenceLab", "NetworkLab", "LabReport", "ChildProcesses"]),
                "PeerDaemon/\(name)")
        }
    }

    /// Wall time comes from `WallClock`, injected; only the tools (bench,
    /// lab, demo, test helpers) read the system clock themselves.
    @Test func onlyWallClockReadsTheSystemClock() throws {
        let shipped = ["Replica", "SyncProtocol", "Gossip", "Discovery", "DaemonClient", "PeerDaemon", "PeerNet"]
        for target in shipped {
            for (name, text) in try Self.sources(of: target)
            where !(target == "Replica" && name.hasSuffix("WallClock.swift")) {
                #expect(!text.contains("Date()"), "\(target)/\(name) reads the clock: inject a WallClock")
            }
        }
    }
}
