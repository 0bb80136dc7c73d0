import Foundation
import TestSupport
import Testing

/// `peerd-demo`, run as the README tells a newcomer to (scripts/demo.sh runs it).
@Suite("peerd-demo")
struct DemoTests {
    @Test("peerd-demo exits 0, ends with three equal state hashes, and leaves no files behind")
    func demoConvergesAndCleansUp() async throws {
        let result = try await ChildProcess.run(Executables.url("peerd-demo"), [])
        #expect(result.status == 0, "\(result)")
        let lines = result.stdout.split(separator: "\n").map(String.init)

        let directory = try #require(
            lines.lazy.compactMap { line -> String? in
                guard line.hasPrefix("work directory: "), let end = line.range(of: " (removed at the end)") else {
                    return nil
                }
                return String(line[line.index(line.startIndex, offsetBy: "work directory: ".count)..<end.lowerBound])
            }.first, "no work directory in\n\(result.stdout)")
        #expect(!FileManager.default.fileExists(atPath: directory), "\(directory) is still there")
        #expect(lines.contains { $0.hasPrefix("discovery: ") })

        let heading = try #require(lines.lastIndex { $0.hasSuffix("State hashes side by side") })
        let hashes = lines[(heading + 1)...].map { $0.split(separator: " ", omittingEmptySubsequences: true) }
        #expect(hashes.map { $0.first.map(String.init) } == ["tablet", "phone", "gateway"], "\(result.stdout)")
        let values = Set(hashes.compactMap { $0.last.map(String.init) })
        #expect(values.count == 1 && values.first?.count == 64, "hashes differ: \(hashes)")
    }

    @Test("peerd-demo piped into head stops its daemons and removes its files once head leaves")
    func demoCleansUpWhenItsReaderLeaves() async throws {
        // 36 lines reach past the start of the first two daemons.
        let script = "\"$0\" | head -n 36"
        let result = try await ChildProcess.run(
            URL(fileURLWithPath: "/bin/sh"), ["-c", script, Executables.url("peerd-demo").path])
        let lines = result.stdout.split(separator: "\n").map(String.init)
        #expect(lines.contains { $0.hasPrefix("http on ") }, "no daemon had started yet:\n\(result.stdout)")
        let prefix = "work directory: "
        let line = try #require(lines.first { $0.hasPrefix(prefix) }, "\(result.stdout)")
        let directory = String(line.dropFirst(prefix.count).prefix { $0 != " " })
        // The shell returns once the demo exited, after its cleanup.
        #expect(!FileManager.default.fileExists(atPath: directory), "\(directory) is still there")
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: "/proc").filter { entry in
            guard Int32(entry) != nil,
                let arguments = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline")
            else { return false }
            return String(decoding: arguments, as: UTF8.self).contains(directory)
        }
        #expect(leftovers.isEmpty, "processes still running on \(directory): \(leftovers)")
    }
}
