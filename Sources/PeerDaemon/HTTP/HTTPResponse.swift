import Replica

/// What a handler answers: a status, headers, and either bytes or a stream
/// the server pulls from until it ends.
struct HTTPResponse: Sendable {
    enum Body: Sendable {
        case bytes([UInt8])
        /// Sent with chunked encoding as the stream produces it.
        case stream(any ResponseStream)
    }

    var status: Int
    var headers: [(String, String)] = []
    var body: Body

    /// A JSON body (`text` is already JSON).
    static func json(_ status: Int, _ text: String) -> HTTPResponse {
        HTTPResponse(
            status: status, headers: [("Content-Type", "application/json")], body: .bytes(Array((text + "\n").utf8)))
    }

    /// An encodable value as canonical JSON.
    static func json<T: Encodable>(_ status: Int = 200, value: T) -> HTTPResponse {
        json(status, CanonicalJSON.text(of: value))
    }

    /// `{"error":{"code":…,"message":…}}` with `status`, `"index":N` when
    /// given, and the `details` as more fields of the error object.
    static func error(
        _ status: Int, _ code: String, _ message: String, index: Int? = nil, details: [String: JSONValue] = [:]
    ) -> HTTPResponse {
        var object = details
        object["code"] = .string(code)
        object["message"] = .string(message)
        if let index { object["index"] = .int(Int64(index)) }
        return json(status, "{\"error\":\(JSONValue.object(object).canonicalText)}")
    }

    static func text(_ status: Int, _ text: String, contentType: String = "text/plain; charset=utf-8") -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", contentType)], body: .bytes(Array(text.utf8)))
    }
}
