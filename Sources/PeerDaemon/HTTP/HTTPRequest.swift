/// One HTTP request as the API sees it: the body is complete and within
/// the server's limit before a handler runs.
struct HTTPRequest: Sendable {
    var method: String
    /// The path without the query string, e.g. `/items/42/events`.
    var path: String
    /// Query arguments, already percent-decoded.
    var query: [String: String]
    /// Header values by lowercased name.
    var headers: [String: String]
    var body: [UInt8]

    /// The path's segments: `/items/42/events` → `["items", "42", "events"]`.
    var segments: [String] { path.split(separator: "/", omittingEmptySubsequences: true).map(String.init) }
}
