import DaemonClient
import Foundation
import Replica

/// `DIR/daemon.json`: how other `peerd` commands reach the daemon running
/// on DIR. Written once the daemon listens, removed when it stops; trusted
/// only while the daemon's lock is held (a crash leaves a stale file).
struct DaemonInfo: Codable {
    var pid: Int32
    var replica_id: String
    /// `HOST:PORT` of the HTTP API; nil with `--http off`.
    var http: String?
    /// The bearer token file the API wants, if any.
    var token_file: String?

    static func path(in directory: DataDirectory) -> String {
        (directory.path as NSString).appendingPathComponent("daemon.json")
    }

    /// Writes the file beside its place and renames it there; a failure
    /// (a full disk, say) leaves no partial file and says what to do.
    func write(in directory: DataDirectory) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        try directory.replaceFile(named: "daemon.json", with: Array(try encoder.encode(self)))
    }

    static func remove(in directory: DataDirectory) {
        try? FileManager.default.removeItem(atPath: path(in: directory))
    }

    /// The daemon running on `directory`, if one is.
    static func running(in directory: DataDirectory) -> DaemonInfo? {
        guard DaemonLock.isHeld(directory), let data = FileManager.default.contents(atPath: path(in: directory))
        else { return nil }
        return try? JSONDecoder().decode(DaemonInfo.self, from: data)
    }

    /// Whether the API at `endpoint` is this daemon's (`GET /health` names
    /// its replica), not unreachable or another process's.
    func answers(at endpoint: DaemonEndpoint) -> Bool {
        // A degraded daemon (503) still serves what it can, and must see the writes: it answers too.
        guard let reply = try? endpoint.request("GET", "/health", timeoutMs: 5_000),
            reply.status == 200 || reply.status == 503
        else { return false }
        return (try? JSONValue.parse(reply.text))?["replica_id"]?.stringValue == replica_id
    }

    /// Its HTTP API, with the token read from `token_file`.
    func endpoint() throws -> DaemonEndpoint? {
        guard let http else { return nil }
        guard let colon = http.lastIndex(of: ":"), let port = UInt16(http[http.index(after: colon)...]) else {
            throw CommandError("daemon.json names a malformed HTTP address \"\(http)\"")
        }
        var host = String(http[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        if host == "0.0.0.0" { host = "127.0.0.1" }
        if host == "::" { host = "::1" }
        let token = try token_file.map { try TokenFile.read($0) }
        return DaemonEndpoint(host: host, port: port, token: token)
    }
}

/// `--http-token-file`: one line, the bearer token (at least 16 bytes).
enum TokenFile {
    static func read(_ path: String) throws -> String {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw CommandError("cannot read the HTTP token file \(path)")
        }
        let token = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard token.utf8.count >= 16, !token.contains(where: { $0.isWhitespace }) else {
            throw CommandError("the HTTP token in \(path) must be one word of at least 16 characters")
        }
        return token
    }
}
