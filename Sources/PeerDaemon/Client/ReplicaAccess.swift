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
    /// otherwise throws the API's error message, with its `code`.
    func call(_ method: String, _ path: String, body: String? = nil, idempotencyKey: String? = nil) throws -> String {
        let reply = try request(
            method, path, body: body, headers: idempotencyKey.map { [("Idempotency-Key", $0)] } ?? [])
        guard (200..<300).contains(reply.status) else {
            let error = (try? JSONValue.parse(reply.text))?["error"]
            throw CommandError(
                error?["message"]?.stringValue ?? "the daemon answered \(reply.status): \(reply.text)",
                code: error?["code"]?.stringValue)
        }
        return reply.text.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// An event the API returned, as the log would have returned it.
    static func storedEvent(_ json: String) throws -> StoredEvent {
        let value = try JSONValue.parse(json)
        guard case .int(let offset)? = value["server_offset"], case .int(let arrival)? = value["server_time_ms"] else {
            throw CommandError("the daemon returned an event without server_offset: \(json)")
        }
        return StoredEvent(event: try EventJSON.event(fromLine: json), offset: offset, arrivalTimeMs: arrival)
    }
}
