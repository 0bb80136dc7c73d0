import Foundation
import TestSupport
import Testing

/// `peerd init`, `init --join` and `cluster-code`, run as real processes.
@Suite("peerd cluster key commands")
struct ClusterKeyCLITests {
    let temp: TemporaryDirectory
    init() throws { temp = try TemporaryDirectory() }

    @discardableResult
    func ok(_ arguments: [String], _ dir: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        let result = try Executables.peerd(arguments, data: temp.url(dir))
        #expect(result.status == 0, "peerd \(arguments) failed: \(result.stderr)", sourceLocation: sourceLocation)
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func keyFile(_ dir: String) -> String { temp.path("\(dir)/cluster.key") }

    @Test("init creates cluster.key with mode 0600 next to replica.db")
    func initCreatesKey() throws {
        let output = try ok(["init"], "a")
        #expect(output.contains("created cluster "))
        let attributes = try FileManager.default.attributesOfItem(atPath: keyFile("a"))
        #expect(attributes[.posixPermissions] as? Int == 0o600)
        #expect(attributes[.size] as? Int == 32)
        #expect(FileManager.default.fileExists(atPath: temp.path("a/replica.db")))
    }

    @Test("the cluster code joins a second replica to the same key")
    func joinWithCode() throws {
        try ok(["init"], "a")
        let code = try ok(["cluster-code"], "a")
        #expect(code.hasPrefix("psc1-") && !code.contains("\n"))
        let joined = try ok(["init", "--join", code], "b")
        #expect(joined.hasPrefix("initialized replica "))
        #expect(joined.contains("joined cluster "))
        #expect(try Data(contentsOf: temp.url("a/cluster.key")) == Data(contentsOf: temp.url("b/cluster.key")))
        #expect(try ok(["cluster-code"], "b") == code)
        let attributes = try FileManager.default.attributesOfItem(atPath: keyFile("b"))
        #expect(attributes[.posixPermissions] as? Int == 0o600)
    }

    @Test("a garbage or mistyped code fails with exit 1 and creates nothing")
    func badCodeCreatesNothing() throws {
        try ok(["init"], "a")
        let code = try ok(["cluster-code"], "a")
        let last = code.last == "0" ? "2" : "0"
        for (bad, message) in [
            ("garbage", "not a PeerSync cluster code"), (String(code.dropLast()) + last, "checksum mismatch"),
        ] {
            let result = try Executables.peerd(["init", "--join", bad], data: temp.url("b"))
            #expect(result.status == 1)
            #expect(result.stderr.hasPrefix("peerd: ") && result.stderr.contains(message), "\(result.stderr)")
            #expect(result.stdout.isEmpty)
            #expect(!FileManager.default.fileExists(atPath: temp.path("b/replica.db")))
            #expect(!FileManager.default.fileExists(atPath: keyFile("b")))
        }
    }

    @Test("init refuses to overwrite a replica and keeps its key")
    func initKeepsKey() throws {
        try ok(["init"], "a")
        let before = try Data(contentsOf: temp.url("a/cluster.key"))
        let again = try Executables.peerd(["init"], data: temp.url("a"))
        #expect(again.status == 1 && again.stderr.contains("refusing to overwrite"))
        #expect(try Data(contentsOf: temp.url("a/cluster.key")) == before)
    }

    @Test("cluster-code refuses a key file others can read and says how to fix it")
    func refusesOpenKeyFile() throws {
        try ok(["init"], "a")
        #expect(chmod(keyFile("a"), 0o644) == 0)
        let result = try Executables.peerd(["cluster-code"], data: temp.url("a"))
        #expect(result.status == 1)
        #expect(result.stderr.contains("chmod 600"))
        #expect(result.stdout.isEmpty)
    }

    @Test("cluster-code without a key points at init")
    func missingKey() throws {
        let result = try Executables.peerd(["cluster-code"], data: temp.url("none"))
        #expect(result.status == 1 && result.stderr.contains("peerd init"))
    }

    @Test("both commands explain themselves with --help")
    func help() throws {
        for command in [["init"], ["cluster-code"]] {
            let result = try Executables.peerd(command + ["--help"], data: temp.url("a"))
            #expect(result.status == 0 && result.stdout.hasPrefix("usage: peerd \(command[0])"))
        }
    }
}
