import DaemonClient
import Foundation
import TestSupport
import Testing

/// The examples of docs/replica.md, built with the package and run for real.
@Suite("Embedding: an app with its own domain syncs with peerd; a DaemonClient app links no libsodium or SQLite")
struct EmbeddingTests {
    let temp: TemporaryDirectory
    init() throws { temp = try TemporaryDirectory() }

    /// The repository's root, from this file's path.
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    @Test("docs/replica.md shows Examples/FieldNotes/main.swift as it is")
    func theDocumentedExampleIsTheBuiltOne() throws {
        let example = try String(
            contentsOf: Self.root.appendingPathComponent("Examples/FieldNotes/main.swift"), encoding: .utf8)
        let docs = try String(contentsOf: Self.root.appendingPathComponent("docs/replica.md"), encoding: .utf8)
        #expect(docs.contains("```swift\n" + example + "```"))
    }

    @Test("field-notes syncs its own domain with a peerd run and back, in a few lines of Swift")
    func anAppWithItsOwnDomainSyncsWithTheDaemon() throws {
        try temp.peerdOK(["init"], "peer")
        try temp.peerdOK(["item", "create", "Bolts", "5"], "peer")
        let daemon = try Daemon.start(data: temp.url("peer"))
        let app = temp.url("app")
        try FileManager.default.createDirectory(at: app, withIntermediateDirectories: false)
        let result = try ChildProcess.run(
            Executables.url("field-notes"),
            [app.path, try temp.peerdOK(["cluster-code"], "peer"), daemon.address, "pump checked"])
        #expect(result.status == 0, "\(result)")
        #expect(result.stdout.contains("site-1: pump checked; 2 events, in sync with \(daemon.address)"), "\(result)")
        // The daemon holds the app's event, stored and replicated though it does not fold the type.
        let events = try #require(daemon.api).request("GET", "/log").text
        #expect(
            events.contains(#""entity_type":"site-note""#) && events.contains(#""text":"pump checked""#), "\(events)")
        #expect(try daemon.stop() == 0)
    }

    @Test("status-probe, which links only DaemonClient, needs neither libsodium nor SQLite, and reads /status")
    func aDaemonClientAppLinksNoSodiumOrSQLite() throws {
        let probe = Executables.url("status-probe")
        let linked = try ChildProcess.run(URL(fileURLWithPath: "/usr/bin/ldd"), [probe.path])
        #expect(linked.status == 0, "\(linked)")
        #expect(!linked.stdout.contains("libsodium") && !linked.stdout.contains("libsqlite3"), "\(linked.stdout)")
        try temp.peerdOK(["init"], "peer")
        let daemon = try Daemon.start(data: temp.url("peer"))
        let result = try ChildProcess.run(probe, [String(try #require(daemon.api).port)])
        #expect(
            result.status == 0 && result.stdout.hasPrefix("200 ") && result.stdout.contains("state_hash"), "\(result)")
        #expect(try daemon.stop() == 0)
    }
}
