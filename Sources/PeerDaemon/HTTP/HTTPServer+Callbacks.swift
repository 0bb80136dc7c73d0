import CMicroHTTPD
import Foundation
import Glibc
import SyncProtocol

/// libmicrohttpd's callbacks, all on its polling thread: they only copy
/// data, suspend or resume connections and hand work to the workers.
extension HTTPServer {
    static let access: MHD_AccessHandlerCallback = {
        context, connection, url, method, _, uploadData, uploadSize, state in
        let server = Unmanaged<HTTPServer>.fromOpaque(context!).takeUnretainedValue()
        guard let connection, let state, let uploadSize else { return .NO }
        guard let pointer = state.pointee else {
            // First call: headers only. Refuse a declared oversized body at once.
            let exchange = HTTPExchange(connection: connection)
            state.pointee = Unmanaged.passRetained(exchange).toOpaque()
            if let length = header(connection, "Content-Length").flatMap(Int.init), length > server.limits.maxBodyBytes
            {
                exchange.refuse()
                return server.queue(server.tooLarge(), on: connection)
            }
            return .YES
        }
        let exchange = Unmanaged<HTTPExchange>.fromOpaque(pointer).takeUnretainedValue()
        if uploadSize.pointee > 0 {
            defer { uploadSize.pointee = 0 }
            guard exchange.isReceiving else { return .YES }
            guard exchange.body.count + uploadSize.pointee <= server.limits.maxBodyBytes else {
                exchange.refuse()
                return server.refuseMidUpload(connection)
            }
            if let uploadData {
                exchange.body.append(
                    contentsOf: UnsafeRawBufferPointer(start: uploadData, count: uploadSize.pointee))
            }
            return .YES
        }
        switch exchange.nextStep() {
        case .handle:
            let request = HTTPRequest(
                method: method.map { String(cString: $0) } ?? "GET", path: url.map { String(cString: $0) } ?? "/",
                query: values(connection, .GET_ARGUMENT_KIND, lowercased: false),
                headers: values(connection, .HEADER_KIND, lowercased: true), body: exchange.body)
            exchange.body = []
            server.handle(request, exchange)
            return .YES
        case .respond(let response):
            return server.queue(response, on: connection)
        case .wait:
            return .YES
        }
    }

    static let completed: MHD_RequestCompletedCallback = { _, _, state, _ in
        guard let state, let pointer = state.pointee else { return }
        Unmanaged<HTTPExchange>.fromOpaque(pointer).takeRetainedValue().finish()
        state.pointee = nil
    }

    /// Suspends the request's connection and runs the handler on a worker,
    /// which resumes it with the response.
    private func handle(_ request: HTTPRequest, _ exchange: HTTPExchange) {
        exchange.beginHandling()
        // Registered after suspending, so that `stop` either finds the
        // exchange to resume it or has already refused it here.
        guard handlingBegan(exchange) else {
            exchange.abandon()
            return
        }
        let queued = pool.submit { [self] in
            exchange.answer(handler(request))
            handlingEnded(exchange)
        }
        if !queued {
            exchange.abandon()
            handlingEnded(exchange)
        }
    }

    func tooLarge() -> HTTPResponse {
        refused(413)
        return .error(413, "too_large", "the request body is larger than \(limits.maxBodyBytes) bytes")
    }

    /// Answers a request whose `Content-Length` libmicrohttpd 0.9.75
    /// refuses as it parses the headers (not a number: 400; more than 64
    /// bits: 413), on its polling thread: its own refusal would carry the
    /// header block twice (see `peersync_http_log`), so this one goes out on
    /// the socket first and libmicrohttpd's then finds the socket shut.
    /// `connection` is the one whose request line came last: answered only
    /// when its `Content-Length` is indeed unreadable. Not counted again:
    /// libmicrohttpd's refusal is (`refused`).
    func refuseUnreadableLength(_ connection: OpaquePointer) {
        guard let declared = Self.header(connection, "Content-Length") else { return }
        let digits = !declared.isEmpty && declared.utf8.allSatisfy { (0x30...0x39).contains($0) }
        // A length libmicrohttpd reads: not the request it refuses (another's request line came in between).
        guard !digits || UInt64(declared) == nil else { return }
        let shown = declared.count > 40 ? declared.prefix(40) + "…" : Substring(declared)
        let response =
            digits
            ? HTTPResponse.error(413, "too_large", "the request body is larger than \(limits.maxBodyBytes) bytes")
            : HTTPResponse.error(400, "bad_request", "Content-Length is not a number: \"\(shown)\"")
        _ = closeAnswering(response, on: connection)
    }

    /// The 413 for a body without `Content-Length` that passed the limit.
    ///
    /// libmicrohttpd (0.9.75 and later) queues a response only right after
    /// the headers or once the whole body is in; `MHD_queue_response`
    /// refuses one in between, and returning `MHD_NO` alone closes the
    /// connection without any response. So the 413 goes out through
    /// ``closeAnswering(_:on:)``.
    private func refuseMidUpload(_ connection: OpaquePointer) -> MHD_Result {
        closeAnswering(tooLarge(), on: connection)
    }

    /// Writes `response` (a 400 or a 413) on the connection's socket
    /// itself, which has sent nothing for this request, shuts its write side
    /// so that the client reads the reply and then the end, and returns
    /// `MHD_NO`, so that libmicrohttpd closes the connection without sending
    /// anything of its own. The reply is far smaller than an idle socket's send buffer; were
    /// it not all taken, the client would see the connection closed, as
    /// without it.
    func closeAnswering(_ response: HTTPResponse, on connection: OpaquePointer) -> MHD_Result {
        let socket = peersync_http_connection_socket(connection)
        guard socket >= 0, case .bytes(let body) = response.body else { return .NO }
        let reason = response.status == 413 ? "Content Too Large" : "Bad Request"
        var head = "HTTP/1.1 \(response.status) \(reason)\r\nConnection: close\r\nContent-Length: \(body.count)\r\n"
        for (name, value) in response.headers { head += "\(name): \(value)\r\n" }
        let reply = Array((head + "\r\n").utf8) + body
        _ = reply.withUnsafeBytes { send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        shutdown(socket, Int32(SHUT_WR))
        return .NO
    }

    func queue(_ response: HTTPResponse, on connection: OpaquePointer) -> MHD_Result {
        let created: OpaquePointer?
        switch response.body {
        case .bytes(let bytes):
            created = bytes.withUnsafeBytes { buffer in
                MHD_create_response_from_buffer(
                    buffer.count, UnsafeMutableRawPointer(mutating: buffer.baseAddress), .RESPMEM_MUST_COPY)
            }
        case .stream(let stream):
            let log = log
            let pump = StreamPump(
                stream: stream, connection: connection, pool: pool, pullBytes: limits.streamPullBytes,
                failed: { reason in log(LogRecord(.error, .httpStreamFailed, "http stream failed", [("error", reason)]))
                },
                finished: { [weak self] pump in self?.closed(pump) })
            stream.attach { [weak pump] in pump?.wake() }
            opened(pump)
            created = MHD_create_response_from_callback(
                peersync_http_size_unknown, 16 << 10, Self.readStream, Unmanaged.passRetained(pump).toOpaque(),
                Self.freeStream)
            if created == nil { Unmanaged.passUnretained(pump).release() }
        }
        guard let created else { return .NO }
        for (name, value) in response.headers { MHD_add_response_header(created, name, value) }
        let result = MHD_queue_response(connection, UInt32(response.status), created)
        MHD_destroy_response(created)
        return result
    }

    private static let readStream: MHD_ContentReaderCallback = { context, _, buffer, maximum in
        guard let buffer else { return Int(peersync_http_end_with_error) }
        return Unmanaged<StreamPump>.fromOpaque(context!).takeUnretainedValue().read(into: buffer, maximum: maximum)
    }

    private static let freeStream: MHD_ContentReaderFreeCallback = { context in
        Unmanaged<StreamPump>.fromOpaque(context!).takeRetainedValue().finish()
    }

    static func header(_ connection: OpaquePointer, _ name: String) -> String? {
        MHD_lookup_connection_value(connection, .HEADER_KIND, name).map { String(cString: $0) }
    }

    /// Every header or query argument of the request.
    private static func values(_ connection: OpaquePointer, _ kind: MHD_ValueKind, lowercased: Bool) -> [String: String]
    {
        final class Collected {
            var values: [String: String] = [:]
            let lowercased: Bool
            init(lowercased: Bool) { self.lowercased = lowercased }
        }
        let collected = Collected(lowercased: lowercased)
        withExtendedLifetime(collected) {
            _ = MHD_get_connection_values(
                connection, kind,
                { context, _, key, value in
                    let collected = Unmanaged<Collected>.fromOpaque(context!).takeUnretainedValue()
                    guard let key else { return .YES }
                    let name = String(cString: key)
                    collected.values[collected.lowercased ? name.lowercased() : name] =
                        value.map { String(cString: $0) } ?? ""
                    return .YES
                }, Unmanaged.passUnretained(collected).toOpaque())
        }
        return collected.values
    }
}
