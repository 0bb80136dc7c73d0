import DaemonClient
import Foundation
import Replica

/// How a CLI command reaches the replica in DIR: through the HTTP API of
/// the daemon running on it, else the files directly. Files also serve
/// when the daemon runs with `--http off` or its API is out of reach (say,
/// from another network namespace): SQLite lets both at the database, and
/// the daemon notices new events within 50 ms.
enum ReplicaAccess {
    case daemon(DaemonEndpoint)
    case files(DataDirectory)

    static func of(_ directory: DataDirectory) throws -> ReplicaAccess {
        guard let daemon = DaemonInfo.running(in: directory), let endpoint = try daemon.endpoint(),
            daemon.answers(at: endpoint)
        else { return .files(directory) }
        return .daemon(endpoint)
    }
}

extension DaemonEndpoint {
    /// Sends a request and returns the reply body when the status is 2xx;
    /// otherwise throws the API's error message.
    func call(_ method: String, _ path: String, body: String? = nil, idempotencyKey: String? = nil) throws -> String {
        let reply = try request(
            method, path, body: body, headers: idempotencyKey.map { [("Idempotency-Key", $0)] } ?? [])
        guard (200..<300).contains(reply.status) else {
            let error = (try? JSONValue.parse(reply.text))?["error"]
            // A command that knows the code says it in its own words (the API's name an HTTP route).
            if let code = error?["code"]?.stringValue, let own = Self.cliMessages[code] {
                throw CommandError(own(path))
            }
            throw CommandError(error?["message"]?.stringValue ?? "the daemon answered \(reply.status): \(reply.text)")
        }
        return reply.text.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The CLI's message for an API error code, from the request path,
    /// where the API's own message points at an HTTP route.
    private static let cliMessages: [String: @Sendable (String) -> String] = [
        "deleted": { path in
            let id = path.split(separator: "/").dropFirst().first.map(String.init) ?? "?"
            return "item \(id) is deleted; `peerd item undo \(id)` restores it"
        }
    ]

    /// An event the API returned, as the log would have returned it.
    static func storedEvent(_ json: String) throws -> StoredEvent {
        let value = try JSONValue.parse(json)
        guard case .int(let offset)? = value["server_offset"], case .int(let arrival)? = value["server_time_ms"] else {
            throw CommandError("the daemon returned an event without server_offset: \(json)")
        }
        return StoredEvent(event: try EventJSON.event(fromLine: json), offset: offset, arrivalTimeMs: arrival)
    }
}
