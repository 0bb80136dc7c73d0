import ChildProcesses
import Foundation
import NetworkLab

/// A node's HTTP API (`127.0.0.1:4000` inside its host), reached with
/// `curl` run in the host: the lab's own process is in no lab namespace.
struct NodeAPI {
    /// An answer: the HTTP status (0 when there was none: refused, timed out) and the body.
    struct Reply {
        var status: Int
        var body: String

        var succeeded: Bool { (200..<300).contains(status) }

        /// The body as a JSON object, if it is one.
        var object: [String: Any]? {
            (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any]
        }
    }

    let lab: NetLab
    let host: Int

    /// Sends one request; `timeoutSeconds` bounds it (a stopped daemon never answers).
    func request(
        _ method: String, _ path: String, body: String? = nil, idempotencyKey: String? = nil,
        timeoutSeconds: Double = 2
    ) async throws -> Reply {
        var command = ["curl", "-s", "-m", String(timeoutSeconds), "-X", method, "-w", "\n%{http_code}"]
        if let body { command += ["-H", "Content-Type: application/json", "--data-binary", body] }
        if let idempotencyKey { command += ["-H", "Idempotency-Key: \(idempotencyKey)"] }
        command.append("http://127.0.0.1:4000\(path)")
        let result = try await lab.exec(host, command)
        let text = result.stdout
        guard let newline = text.lastIndex(of: "\n") else { return Reply(status: 0, body: text) }
        let status = Int(text[text.index(after: newline)...].trimmingCharacters(in: .whitespaces)) ?? 0
        return Reply(status: status, body: String(text[..<newline]))
    }
}
