import CMicroHTTPD
import Foundation
import Glibc
import Gossip
import PeerNet

/// An HTTP/1.1 server over libmicrohttpd: one thread per connection (at
/// most `connectionLimit`), bodies buffered up to `maxBodyBytes` (larger
/// ones get 413 without reaching the handler), and streamed responses for
/// the change stream.
///
/// `@unchecked Sendable`: libmicrohttpd calls in on its own threads; the
/// only mutable state, the open streams, is guarded by `lock`.
final class HTTPServer: @unchecked Sendable {
    typealias Handler = @Sendable (HTTPRequest) -> HTTPResponse

    struct Limits: Sendable {
        var maxBodyBytes = 1 << 20
        var connectionLimit: UInt32 = 256
        /// Seconds an idle connection stays open.
        var idleTimeoutSeconds: UInt32 = 30
    }

    let limits: Limits
    private let handler: Handler
    private var daemon: OpaquePointer?
    private let lock = NSLock()
    private var streams: [ObjectIdentifier: any ResponseStream] = [:]
    /// Signalled whenever a stream's response is finished.
    private let drained = NSCondition()
    /// Told the status of each response the server sends by itself (413).
    private let refused: @Sendable (Int) -> Void

    init(limits: Limits = Limits(), handler: @escaping Handler, refused: @escaping @Sendable (Int) -> Void = { _ in }) {
        self.limits = limits
        self.handler = handler
        self.refused = refused
    }

    /// Listens on `host:port` (port 0 picks one) and returns the port.
    func start(host: String, port: UInt16) throws -> UInt16 {
        let listener = try Socket.listen(host: host, port: port)
        let boundPort = listener.localPort
        // libmicrohttpd owns (and closes) its own descriptor of the socket.
        let descriptor = dup(listener.descriptor)
        let started = peersync_http_start(
            descriptor, host.contains(":") ? 1 : 0, limits.connectionLimit, limits.idleTimeoutSeconds,
            limits.maxBodyBytes + (64 << 10), Self.access, Unmanaged.passUnretained(self).toOpaque(), Self.completed,
            nil)
        guard let started else {
            close(descriptor)
            throw CommandError("cannot start the HTTP server on \(host):\(boundPort)")
        }
        daemon = started
        return boundPort
    }

    /// Stops accepting connections; requests on open ones still run.
    func quiesce() {
        guard let daemon else { return }
        let descriptor = MHD_quiesce_daemon(daemon)
        if descriptor >= 0 { close(descriptor) }
    }

    /// Ends every open stream, waits (up to `drainSeconds`) until their
    /// responses are finished, so clients see a proper end of stream, then
    /// stops the server and joins its threads.
    func stop(drainSeconds: TimeInterval = 2) {
        let open = lock.withLock { Array(streams.values) }
        for stream in open { stream.close() }
        let deadline = Date(timeIntervalSinceNow: drainSeconds)
        drained.lock()
        while lock.withLock({ !streams.isEmpty }) && drained.wait(until: deadline) {}
        drained.unlock()
        if let daemon { MHD_stop_daemon(daemon) }
        daemon = nil
    }

    // MARK: - libmicrohttpd callbacks

    /// Per request: the body so far, kept in `*con_cls` between calls.
    private final class Upload {
        var body: [UInt8] = []
        var tooLarge = false
    }

    private static let access: MHD_AccessHandlerCallback = {
        context, connection, url, method, _, uploadData, uploadSize, state in
        let server = Unmanaged<HTTPServer>.fromOpaque(context!).takeUnretainedValue()
        guard let connection, let state, let uploadSize else { return .NO }
        guard let pointer = state.pointee else {
            // First call: headers only. Refuse a declared oversized body at once.
            let upload = Upload()
            state.pointee = Unmanaged.passRetained(upload).toOpaque()
            if let length = header(connection, "Content-Length").flatMap(Int.init), length > server.limits.maxBodyBytes
            {
                upload.tooLarge = true
                return server.queue(server.tooLarge(), on: connection)
            }
            return .YES
        }
        let upload = Unmanaged<Upload>.fromOpaque(pointer).takeUnretainedValue()
        if uploadSize.pointee > 0 {
            if !upload.tooLarge {
                if upload.body.count + uploadSize.pointee > server.limits.maxBodyBytes {
                    upload.tooLarge = true
                    upload.body = []
                } else if let uploadData {
                    uploadData.withMemoryRebound(to: UInt8.self, capacity: uploadSize.pointee) {
                        upload.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: uploadSize.pointee))
                    }
                }
            }
            uploadSize.pointee = 0
            return .YES
        }
        if upload.tooLarge { return server.queue(server.tooLarge(), on: connection) }
        let request = HTTPRequest(
            method: method.map { String(cString: $0) } ?? "GET", path: url.map { String(cString: $0) } ?? "/",
            query: values(connection, .GET_ARGUMENT_KIND, lowercased: false),
            headers: values(connection, .HEADER_KIND, lowercased: true), body: upload.body)
        return server.queue(server.handler(request), on: connection)
    }

    private static let completed: MHD_RequestCompletedCallback = { _, _, state, _ in
        guard let state, let pointer = state.pointee else { return }
        Unmanaged<Upload>.fromOpaque(pointer).release()
        state.pointee = nil
    }

    private func tooLarge() -> HTTPResponse {
        refused(413)
        return .error(413, "too_large", "the request body is larger than \(limits.maxBodyBytes) bytes")
    }

    private func queue(_ response: HTTPResponse, on connection: OpaquePointer) -> MHD_Result {
        let created: OpaquePointer?
        switch response.body {
        case .bytes(let bytes):
            created = bytes.withUnsafeBytes { buffer in
                MHD_create_response_from_buffer(
                    buffer.count, UnsafeMutableRawPointer(mutating: buffer.baseAddress),
                    MHD_ResponseMemoryMode(rawValue: 2)!)  // MHD_RESPMEM_MUST_COPY
            }
        case .stream(let stream):
            lock.withLock { streams[ObjectIdentifier(stream)] = stream }
            let box = StreamBox(stream: stream, server: self)
            created = MHD_create_response_from_callback(
                UInt64.max, 16 << 10, Self.readStream, Unmanaged.passRetained(box).toOpaque(), Self.freeStream)
        }
        guard let created else { return .NO }
        for (name, value) in response.headers { MHD_add_response_header(created, name, value) }
        let result = MHD_queue_response(connection, UInt32(response.status), created)
        MHD_destroy_response(created)
        return result
    }

    private final class StreamBox {
        let stream: any ResponseStream
        weak var server: HTTPServer?

        init(stream: any ResponseStream, server: HTTPServer) {
            self.stream = stream
            self.server = server
        }
    }

    private static let readStream: MHD_ContentReaderCallback = { context, _, buffer, maximum in
        let box = Unmanaged<StreamBox>.fromOpaque(context!).takeUnretainedValue()
        guard let buffer, let bytes = box.stream.next(maximum: maximum) else { return -1 }  // end of stream
        bytes.withUnsafeBytes { UnsafeMutableRawPointer(buffer).copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
        return bytes.count
    }

    private static let freeStream: MHD_ContentReaderFreeCallback = { context in
        let box = Unmanaged<StreamBox>.fromOpaque(context!).takeRetainedValue()
        box.stream.close()
        guard let server = box.server else { return }
        server.lock.withLock { _ = server.streams.removeValue(forKey: ObjectIdentifier(box.stream)) }
        server.drained.withLock { server.drained.broadcast() }
    }

    private static func header(_ connection: OpaquePointer, _ name: String) -> String? {
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
