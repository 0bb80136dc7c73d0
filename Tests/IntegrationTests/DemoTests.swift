import Foundation
import TestSupport
import Testing

/// `peerd demo`, run as the README tells a newcomer to (scripts/demo.sh runs it).
@Suite("peerd demo")
struct DemoTests {
    @Test("peerd demo exits 0, ends with three equal state hashes, and leaves no files behind")
    func demoConvergesAndCleansUp() async throws {
        let result = try await ProcessRun.runUnmasked(Executables.url("peerd"), ["demo"])
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
}
