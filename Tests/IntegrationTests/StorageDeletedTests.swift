import DaemonClient
import Foundation
import Replica
import TestSupport
import Testing

/// `replica.db` deleted or replaced under a running daemon: noticed without
/// a write (inotify on the data directory), reported on `/health` and
/// `/status` as storage `deleted`, and nothing more is written into the
/// unlinked file (docs/operations.md, "Storage faults").
@Suite("peerd run: a deleted replica.db is noticed and reported")
struct StorageDeletedTests {
    let temp: TemporaryDirectory
    init() throws { temp = try TemporaryDirectory() }

    /// `/health` as JSON, with its status code.
    func health(_ api: DaemonEndpoint) throws -> (status: Int, body: [String: Any]) {
        let reply = try api.request("GET", "/health")
        let body = try JSONSerialization.jsonObject(with: Data(reply.body)) as? [String: Any] ?? [:]
        return (reply.status, body)
    }

    func storageFault(_ body: [String: Any]) -> String? {
        (body["storage"] as? [String: Any])?["fault"] as? String
    }

    /// Deletes (`replace: false`) or replaces the daemon's file, then
    /// waits for `/health` to report it and checks that writes are refused.
    func noticed(replace: Bool) async throws {
        try temp.peerdOK(["init"], "a")
        let daemon = try Daemon.start(data: temp.url("a"))
        defer { _ = try? daemon.stop() }
        let api = try #require(daemon.api)
        let before = try api.request("POST", "/items", body: #"{"name":"Bolts","quantity":5}"#)
        #expect(before.status == 201, "\(before.text)")
        #expect(try health(api).status == 200)

        let database = temp.path("a/replica.db")
        var putInPlace: Data?
        if replace {
            // A copy put in its place (a restore done wrong): the daemon still has the old file open.
            try FileManager.default.copyItem(atPath: database, toPath: database + ".copy")
            putInPlace = FileManager.default.contents(atPath: database + ".copy")
            #expect(rename(database + ".copy", database) == 0)
        } else {
            try FileManager.default.removeItem(atPath: database)
        }
        // No write needed: the daemon notices on its own.
        try await Poll.eventually("/health reports the file deleted", timeout: .seconds(10)) {
            try storageFault(health(api).body) == "deleted"
        }
        let (status, body) = try health(api)
        #expect(status == 503 && body["status"] as? String == "degraded", "\(body)")
        let status2 = try api.request("GET", "/status")
        let storage = (try JSONSerialization.jsonObject(with: Data(status2.body)) as? [String: Any])?["storage"]
        #expect((storage as? [String: Any])?["state"] as? String == "degraded", "\(status2.text)")
        #expect((storage as? [String: Any])?["fault"] as? String == "deleted", "\(status2.text)")

        // A write is refused with the reason, not stored into the unlinked file.
        let after = try api.request("POST", "/items", body: #"{"name":"Nuts","quantity":1}"#)
        #expect(after.status == 503 && after.text.contains("storage_degraded"), "\(after.status) \(after.text)")
        #expect(after.text.contains("was deleted or replaced while open"), "\(after.text)")
        #expect(try api.request("GET", "/metrics").text.contains("peersync_storage_degraded 1"))
        if replace {
            #expect(FileManager.default.contents(atPath: database) == putInPlace, "the file put in place is left alone")
        } else {
            #expect(!FileManager.default.fileExists(atPath: database), "nothing created a new file")
        }
        #expect(daemon.isRunning)
    }

    @Test("a deleted replica.db: /health and /status say storage deleted, and writes are refused")
    func deletedFileIsReported() async throws {
        try await noticed(replace: false)
    }

    @Test("a replica.db replaced by another file: reported the same way, and the new file is left alone")
    func replacedFileIsReported() async throws {
        try await noticed(replace: true)
    }
}
