import Foundation
import SyncProtocol
import TestSupport
import Testing

/// `peerd run` settings from a config file (`DIR/peerd.conf` or
/// `--config PATH`), with real daemons.
@Suite("peerd run: config file")
struct ConfigFileTests {
    let temp: TemporaryDirectory
    init() throws { temp = try TemporaryDirectory() }

    /// Runs peerd on `dir` and requires success; returns stdout, trimmed.
    @discardableResult
    func ok(_ arguments: [String], _ dir: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        let result = try Executables.peerd(arguments, data: temp.url(dir))
        try #require(result.status == 0, "peerd \(arguments) failed: \(result.stderr)", sourceLocation: sourceLocation)
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Replicas `first` and `other` of one cluster.
    func cluster(_ first: String, _ other: String) throws {
        try ok(["init"], first)
        try ok(["init", "--join", try ok(["cluster-code"], first)], other)
    }

    /// `peerd run --data DIR` plus `arguments` (and nothing else: the rest
    /// must come from the config file) as a child process. Daemons here
    /// turn the HTTP API off (`http = off` or `--http off`), so that they do
    /// not contend for its default port.
    func run(_ dir: String, _ arguments: [String] = []) throws -> ChildProcess {
        try ChildProcess(
            Executables.url("peerd"), ["run", "--data", temp.path(dir)] + arguments,
            name: "peerd run (\(dir))")
    }

    /// Waits until `child` printed `listening on HOST:PORT`; returns the line.
    func listening(_ child: ChildProcess, sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        let address = child.stdout.firstLine(startingWith: "listening on ", timeout: .seconds(30))
        return try #require(
            address.map { "listening on " + $0 }, "\(child.name) printed no address\n\(child.stderr.text)",
            sourceLocation: sourceLocation)
    }

    /// The `addr` of every `dial.failed` event of `child`.
    func dialFailures(_ child: ChildProcess) -> Set<String> {
        Set(child.stderr.events(.dialFailed).compactMap { $0["addr"] })
    }

    @Test("a config file in the data directory sets the listen address, mDNS off, the log level and the peers")
    func dataDirectoryConfigIsUsed() throws {
        try cluster("a", "b")
        let a = try Daemon.start(data: temp.url("a"))
        try """
        # b dials a; 127.0.0.1:1 is never up
        listen = 127.0.0.1:0
        no-mdns = true
        log-level = debug
        http = off

        peer = 127.0.0.1:1
        peer = \(a.address)
        """.write(toFile: temp.path("b/peerd.conf"), atomically: true, encoding: .utf8)

        let b = try run("b")
        #expect(try listening(b).hasPrefix("listening on 127.0.0.1:"))
        #expect(b.stderr.waitForEvent(.peerIdentified), "b never met a\n\(b.stderr.text)")
        #expect(
            Poll.until(timeout: .seconds(30)) { dialFailures(b).contains("127.0.0.1:1") },
            "no debug line about the dead peer\n\(b.stderr.text)")
        #expect(b.stderr.waitForEvent(.replicaRunning, ["peers": "2"]), "\(b.stderr.text)")
        #expect(b.stderr.events(.discoveryNotice).isEmpty, "mDNS ran despite no-mdns = true\n\(b.stderr.text)")
        let ended = try b.stop(with: SIGTERM)
        #expect(ended.reason == .exit && ended.status == 0, "\(ended)\n\(b.stderr.text)")
        #expect(try a.stop() == 0)
    }

    @Test("flags on the command line override the config file, and --peer replaces all of its peers")
    func commandLineOverridesFile() throws {
        try cluster("a", "b")
        let a = try Daemon.start(data: temp.url("a"))
        try """
        listen = 127.0.0.1:0
        no-mdns = true
        log-level = error
        peer = 127.0.0.1:1
        peer = 127.0.0.1:2
        """.write(toFile: temp.path("elsewhere.conf"), atomically: true, encoding: .utf8)

        let b = try run(
            "b",
            ["--config", temp.path("elsewhere.conf"), "--log-level", "debug", "--peer", a.address, "--http", "off"])
        #expect(try listening(b).hasPrefix("listening on 127.0.0.1:"))
        #expect(b.stderr.waitForEvent(.peerIdentified), "b never met a\n\(b.stderr.text)")
        #expect(b.stderr.waitForEvent(.replicaRunning, ["peers": "1"]), "\(b.stderr.text)")
        #expect(dialFailures(b).isEmpty, "a peer of the file was dialed\n\(b.stderr.text)")
        let ended = try b.stop(with: SIGTERM)
        #expect(ended.reason == .exit && ended.status == 0, "\(ended)\n\(b.stderr.text)")
        #expect(try a.stop() == 0)
    }

    /// A config file that must stop `peerd run` before it starts: its text,
    /// the line at fault, and what the message says about it.
    struct BadFile: Sendable, CustomStringConvertible {
        var text: String
        var line: Int
        var message: String
        var description: String { message }
    }

    @Test(
        "a bad config file is one line naming the file and line, exit code 78, and nothing started",
        arguments: [
            BadFile(text: "listen = 127.0.0.1:0\nlisen = 127.0.0.1:0\n", line: 2, message: "unknown key \"lisen\""),
            BadFile(text: "# the daemon\n\nlisten 127.0.0.1:0\n", line: 3, message: "expected `key = value`"),
            BadFile(text: "no-mdns = yes\n", line: 1, message: "\"no-mdns\" is true or false, not \"yes\""),
            BadFile(
                text: "listen = 127.0.0.1:0\npeer = 127.0.0.1:1\npeer = 127.0.0.1:2\nlisten = 127.0.0.1:5\n", line: 4,
                message: "\"listen\" is already set on line 1"),
            // Values wrong in the file's own keys are named by line too, not printed as a usage error.
            BadFile(text: "no-mdns = true\nlisten = garbage\n", line: 2, message: "--listen needs HOST:PORT"),
            BadFile(
                text: "peer = 127.0.0.1:1\npeer = nowhere\n", line: 2,
                message: "--peer needs HOST:PORT, not \"nowhere\""),
            BadFile(text: "double-tap-ms = soon\n", line: 1, message: "--double-tap-ms must be a whole number"),
            BadFile(
                text: "relay = true\nmax-connections = 0\n", line: 2,
                message: "--max-connections must be a whole number from 1 to 65536, not \"0\""),
            // A file with Windows line endings is read line by line like any other.
            BadFile(text: "no-mdns = true\r\nlisen = 127.0.0.1:0\r\n", line: 2, message: "unknown key \"lisen\""),
        ])
    func badFileIsRefused(_ bad: BadFile) throws {
        try ok(["init"], "a")
        let path = temp.path("a/peerd.conf")
        try bad.text.write(toFile: path, atomically: true, encoding: .utf8)
        let child = try run("a")
        #expect(child.waitForExit(timeout: .seconds(30)) != nil, "peerd run started despite the bad file")
        let ended = try child.stop(with: SIGKILL)
        #expect(ended.reason == .exit && ended.status == 78)
        child.stderr.waitForEnd(timeout: .seconds(5))
        #expect(child.stderr.lines.count == 1, "not one line: \(child.stderr.text)")
        #expect(child.stderr.text.hasPrefix("peerd: \(path):\(bad.line): \(bad.message)"), "\(child.stderr.text)")
        #expect(child.stdout.text.isEmpty)
    }

    @Test("--config names a file that must exist")
    func missingConfigIsRefused() throws {
        try ok(["init"], "a")
        let path = temp.path("missing.conf")
        let child = try run("a", ["--config", path])
        #expect(child.waitForExit(timeout: .seconds(30)) != nil, "peerd run started without its config file")
        let ended = try child.stop(with: SIGKILL)
        #expect(ended.reason == .exit && ended.status == 78)
        child.stderr.waitForEnd(timeout: .seconds(5))
        #expect(child.stderr.text == "peerd: \(path): no such config file (given with --config)\n")
    }
}
