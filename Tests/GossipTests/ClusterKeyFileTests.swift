import Foundation
import SyncProtocol
import TestSupport
import Testing

@testable import Gossip

@Suite struct ClusterKeyFileTests {
    let temp: TemporaryDirectory
    init() throws { temp = try TemporaryDirectory() }

    /// The key every test writes: the bytes 0 to 31.
    let fixedClusterKey = try! ClusterKey(bytes: (0..<32).map { UInt8($0) })

    @Test func aKeyFileIsThirtyTwoBytesWithModeSixHundred() throws {
        let path = temp.path("cluster.key")
        try fixedClusterKey.write(toFile: path)
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect(attributes[.posixPermissions] as? Int == 0o600)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data((0..<32).map { UInt8($0) }))
        #expect(try ClusterKey.read(fromFile: path) == fixedClusterKey)
    }

    @Test func writingNeverReplacesAFile() throws {
        let path = temp.path("cluster.key")
        try fixedClusterKey.write(toFile: path)
        #expect(throws: KeyFileError.exists(path: path)) { try ClusterKey.generate().write(toFile: path) }
        #expect(try ClusterKey.read(fromFile: path) == fixedClusterKey)
    }

    @Test func readingRefusesAMissingOpenDamagedOrOddFile() throws {
        let path = temp.path("cluster.key")
        #expect(throws: KeyFileError.missing(path: path)) { try ClusterKey.read(fromFile: path) }
        try fixedClusterKey.write(toFile: path)
        chmod(path, 0o640)
        #expect(throws: KeyFileError.tooOpen(path: path, mode: 0o640)) { try ClusterKey.read(fromFile: path) }
        #expect(errorText { try ClusterKey.read(fromFile: path) }.hasSuffix("run `chmod 600 \(path)`"))
        let short = temp.path("short.key")
        _ = FileManager.default.createFile(
            atPath: short, contents: Data(count: 31), attributes: [.posixPermissions: 0o600])
        #expect(throws: KeyFileError.wrongSize(path: short, size: 31)) { try ClusterKey.read(fromFile: short) }
        #expect(throws: KeyFileError.notRegular(path: temp.url.path)) {
            try ClusterKey.read(fromFile: temp.url.path)
        }
    }

    /// The description of the error `body` throws, or "" when it throws none.
    func errorText<Result>(_ body: () throws -> Result) -> String {
        do {
            _ = try body()
            return ""
        } catch {
            return "\(error)"
        }
    }
}
