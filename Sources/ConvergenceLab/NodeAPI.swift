import ChildProcesses
import Foundation
import NetworkLab

/// A node's HTTP API (`127.0.0.1:4000` inside its host), reached with
/// `curl` run in the host's network namespace (`nsenter --net`): the lab's
/// own process is in no lab namespace.
struct NodeAPI: Sendable {
    /// An answer: the HTTP status (0 when there was none: refused, timed out) and the body.
    struct Reply: Sendable {
        var status: Int
        var body: String

        var succeeded: Bool { (200..<300).contains(status) }

        /// The body as a JSON object, if it is one.
        var object: [String: Any]? {
            (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any]
        }

        /// The API's error code (`{"error":{"code":…}}`), `no_answer` without a status, else `http_STATUS`.
        var errorCode: String {
            guard status != 0 else { return "no_answer" }
            return ((object?["error"] as? [String: Any])?["code"] as? String) ?? "http_\(status)"
        }
    }

    /// The host's network namespace, e.g. `plab3x51`.
    let namespace: String

    init(lab: NetLab, host: Int) { namespace = lab.namespace(of: host) }

    init(namespace: String) { self.namespace = namespace }

    /// Sends one request; `timeoutSeconds` bounds it (a stopped daemon never answers).
    func request(
        _ method: String, _ path: String, body: String? = nil, idempotencyKey: String? = nil,
        timeoutSeconds: Double = 2
    ) async throws -> Reply {
        var command = ["--net=/run/netns/\(namespace)", "curl", "-s", "-m", String(timeoutSeconds), "-X", method]
        command += ["-w", "\n%{http_code}"]
        if let body { command += ["-H", "Content-Type: application/json", "--data-binary", body] }
        if let idempotencyKey { command += ["-H", "Idempotency-Key: \(idempotencyKey)"] }
        command.append("http://127.0.0.1:4000\(path)")
        let result = try await ChildProcess.run(URL(fileURLWithPath: "/usr/bin/nsenter"), command)
        let text = result.stdout
        guard let newline = text.lastIndex(of: "\n") else { return Reply(status: 0, body: text) }
        let status = Int(text[text.index(after: newline)...].trimmingCharacters(in: .whitespaces)) ?? 0
        return Reply(status: status, body: String(text[..<newline]))
    }
}
