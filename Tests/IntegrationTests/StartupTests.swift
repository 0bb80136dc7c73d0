import DaemonClient
import Foundation
import TestSupport
import Testing

/// `peerd run`'s start: configuration errors exit 78, which the systemd unit
/// does not restart (docs/operations.md, "Running under systemd"), and
/// other failures keep exit code 1.
@Suite("peerd run: startup exit codes")
struct StartupExitTests {
    let temp: TemporaryDirectory
    init() throws { temp = try TemporaryDirectory() }

    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    func run(_ dir: String, _ arguments: [String]) throws -> ProcessResult {
        try Executables.peerd(
            ["run", "--listen", "127.0.0.1:0", "--no-mdns", "--http", "off"] + arguments, data: temp.url(dir))
    }

    @Test("a bad flag, value, config file, data directory or token file exits 78 with one line saying what")
    func configurationErrorsExit78() throws {
        try temp.peerdOK(["init"], "a")
        try temp.peerdOK(["init"], "damaged")
        try Data("not a certificate".utf8).write(to: temp.url("damaged/certificate"))
        try "lisen = 127.0.0.1:0\n".write(toFile: temp.path("bad.conf"), atomically: true, encoding: .utf8)
        try "short\n".write(toFile: temp.path("token"), atomically: true, encoding: .utf8)
        for (dir, arguments, message) in [
            ("a", ["--frobnicate"], "unknown option --frobnicate"),
            ("a", ["--log-level", "loud"], "--log-level must be debug, info, warning or error"),
            ("a", ["--config", temp.path("bad.conf")], "\(temp.path("bad.conf")):1: unknown key \"lisen\""),
            ("a", ["--config", temp.path("missing.conf")], "no such config file"),
            ("none", [], "no replica in \(temp.path("none"))"),
            ("damaged", [], "\(temp.path("damaged/certificate")): "),
            (
                "a", ["--http", "127.0.0.1:0", "--http-token-file", temp.path("token")],
                "must be one word of at least 16"
            ),
        ] {
            let result = try run(dir, arguments)
            #expect(result.status == 78, "\(arguments): \(result)")
            #expect(result.stderr.hasPrefix("peerd: ") && result.stderr.contains(message), "\(arguments): \(result)")
        }
        #expect(!FileManager.default.fileExists(atPath: temp.path("none")))
    }

    @Test("a database peerd cannot open is a failure, exit 1, not a configuration error")
    func otherFailuresExit1() throws {
        try temp.peerdOK(["init"], "a")
        try Data("not a database, not at all".utf8).write(to: temp.url("a/replica.db"))
        let result = try run("a", [])
        #expect(result.status == 1, "\(result)")
        #expect(result.stderr.hasPrefix("peerd: error: "), "\(result)")
    }

    @Test("the systemd unit does not restart a daemon that exits 78")
    func unitPreventsRestartOnConfigurationErrors() throws {
        let unit = try String(
            contentsOf: Self.root.appendingPathComponent("contrib/systemd/peerd.service"), encoding: .utf8)
        let settings = unit.split(separator: "\n").filter { !$0.hasPrefix("#") }
        #expect(settings.contains("Restart=on-failure"))
        let prevent = settings.filter { $0.hasPrefix("RestartPreventExitStatus=") }
        #expect(prevent.count == 1, "\(prevent)")
        #expect(prevent.first?.split(separator: "=").last?.split(separator: " ").contains("78") == true, "\(prevent)")
    }
}
