import CMicroHTTPD
import Foundation
import Glibc
import Gossip
import PeerNet
import SyncProtocol

/// An HTTP/1.1 server over libmicrohttpd without a thread per connection.
///
/// One libmicrohttpd thread polls every connection (epoll) and never
/// blocks: once a request is complete, its connection is suspended and the
/// handler runs on one of `Limits.workerThreads` workers, which resumes
/// it with the response. Bodies are buffered up to `maxBodyBytes`; a larger
/// one gets 413 as soon as it passes the limit, without reaching the
/// handler. Streamed responses (the change stream) are pulled by the same
/// workers and cost no thread while they wait (`StreamPump`).
///
/// ```swift
/// let server = HTTPServer(handler: { _ in .json(200, "{}") })
/// let port = try server.start(host: "127.0.0.1", port: 0)
/// server.quiesce()
/// server.stop()
/// ```
///
/// `@unchecked Sendable`: libmicrohttpd calls in on its polling thread and
/// workers call back; the open streams, the requests being handled and
/// `stopping` are guarded by `lock`, the daemon handle is only set in
/// `start` and `stop`.
final class HTTPServer: @unchecked Sendable {
    typealias Handler = @Sendable (HTTPRequest) -> HTTPResponse

    struct Limits: Sendable {
        var maxBodyBytes = 1 << 20
        /// Open connections at most, waiting change streams and idle
        /// keep-alive ones included; lowered at start to what the process's
        /// descriptor limit can hold (`DescriptorBudget`).
        var connectionLimit: UInt32 = 1024
        /// Descriptors the process holds for other connections (the sync
        /// peers and handshakes), left out of the HTTP server's budget.
        var descriptorsBesides: UInt32 = 0
        /// Seconds a connection may send and receive nothing before it is
        /// closed: an idle keep-alive one, a client that stopped sending its
        /// request or stopped reading. A suspended connection (its handler
        /// running, its change stream waiting) does not time out in
        /// libmicrohttpd 0.9.75, and the change stream's keepalive (15 s)
        /// comes sooner anyway.
        var idleTimeoutSeconds: UInt32 = 20
        /// Threads that run handlers and pull streams.
        var workerThreads = 4
        /// libmicrohttpd's memory per connection: the request head must
        /// fit in it (else 431); bodies are copied out as they arrive.
        var memoryPerConnection = 128 << 10
        /// How much a worker pulls from a stream at a time.
        var streamPullBytes = 64 << 10
        /// How often waiting streams are pulled anyway (the change stream
        /// looks for events another process wrote, and for its keepalive).
        var tickSeconds: TimeInterval = 1
    }

    let limits: Limits
    let handler: Handler
    let pool: WorkerPool
    private var daemon: OpaquePointer?
    private var ticker: Ticker?
    private var errorHook: UnsafeMutablePointer<peersync_http_error_hook>?
    private let lock = NSLock()
    private var streams: [ObjectIdentifier: StreamPump] = [:]
    private var handling: [ObjectIdentifier: HTTPExchange] = [:]
    private var stopping = false
    /// Set once `stop` gave up waiting: from then on no connection may be
    /// suspended, as libmicrohttpd must not stop with one suspended.
    private var finalStop = false
    /// Signalled whenever a stream's response or a handler is finished.
    private let drained = NSCondition()
    /// Told the status of each response the server sends by itself: 413,
    /// and libmicrohttpd's own (400 for a malformed request…).
    let refused: @Sendable (Int) -> Void
    let log: @Sendable (LogRecord) -> Void

    init(
        limits: Limits = Limits(), handler: @escaping Handler, refused: @escaping @Sendable (Int) -> Void = { _ in },
        log: @escaping @Sendable (LogRecord) -> Void = { _ in }
    ) {
        self.limits = limits
        self.handler = handler
        self.refused = refused
        self.log = log
        pool = WorkerPool(threads: limits.workerThreads, name: "peerd-http")
    }

    deinit {
        errorHook?.deallocate()
    }

    /// Listens on `host:port` (port 0 picks one) and returns the port.
    func start(host: String, port: UInt16) throws -> UInt16 {
        let connectionLimit = DescriptorBudget.connections(
            wanted: limits.connectionLimit, besides: limits.descriptorsBesides)
        if connectionLimit < limits.connectionLimit {
            log(
                LogRecord(
                    .warning, .httpDescriptorsLow,
                    "fewer HTTP connections than wanted: the descriptor limit (ulimit -n) is too low",
                    [("connections", "\(connectionLimit)"), ("wanted", "\(limits.connectionLimit)")]))
        }
        let listener = try Socket.listen(host: host, port: port, backlog: Int32(min(connectionLimit, 4096)))
        let boundPort = listener.localPort
        let hook = UnsafeMutablePointer<peersync_http_error_hook>.allocate(capacity: 1)
        hook.initialize(
            to: peersync_http_error_hook(
                status: { context, status in
                    Unmanaged<HTTPServer>.fromOpaque(context!).takeUnretainedValue().refused(Int(status))
                },
                unreadable_length: { context, connection in
                    guard let connection else { return }
                    Unmanaged<HTTPServer>.fromOpaque(context!).takeUnretainedValue().refuseUnreadableLength(connection)
                }, context: Unmanaged.passUnretained(self).toOpaque(), last_request: nil))
        errorHook = hook
        // libmicrohttpd owns (and closes) its own descriptor of the socket.
        let descriptor = dup(listener.descriptor)
        let started = peersync_http_start(
            descriptor, host.contains(":") ? 1 : 0, connectionLimit, limits.idleTimeoutSeconds,
            limits.memoryPerConnection, Self.access, Unmanaged.passUnretained(self).toOpaque(), Self.completed, nil,
            hook)
        guard let started else {
            close(descriptor)
            throw CommandError("cannot start the HTTP server on \(host):\(boundPort)")
        }
        daemon = started
        ticker = Ticker(every: limits.tickSeconds, name: "peerd-http-tick") { [weak self] in self?.tick() }
        return boundPort
    }

    /// Stops accepting connections; requests on open ones still run.
    func quiesce() {
        guard let daemon else { return }
        let descriptor = MHD_quiesce_daemon(daemon)
        if descriptor >= 0 { close(descriptor) }
    }

    /// Ends every open stream and waits (up to `drainSeconds`) until their
    /// responses are finished, so clients see a proper end of stream, and
    /// until running handlers answered; gives up on what is left (a stream
    /// then ends without its final chunk, a request's connection closes
    /// without a reply, or with 503), then stops the server and joins its
    /// polling thread.
    func stop(drainSeconds: TimeInterval = 2) {
        let open = lock.withLock {
            stopping = true
            return Array(streams.values)
        }
        for pump in open {
            pump.stream.close()
            pump.wake()
        }
        let deadline = Date(timeIntervalSinceNow: drainSeconds)
        drained.lock()
        while lock.withLock({ !streams.isEmpty || !handling.isEmpty }) && drained.wait(until: deadline) {}
        drained.unlock()
        // libmicrohttpd must not stop with a connection suspended: what is
        // suspended now is resumed, and nothing is suspended any more.
        let (leftStreams, leftRequests) = lock.withLock {
            finalStop = true
            return (Array(streams.values), Array(handling.values))
        }
        for pump in leftStreams { pump.abandon() }
        for exchange in leftRequests { exchange.abandon() }
        ticker?.stop()
        if let daemon { MHD_stop_daemon(daemon) }
        daemon = nil
        pool.stop()
    }

    // MARK: - Bookkeeping for the callbacks

    /// A stream's response was queued; during shutdown it is closed at
    /// once, and given up on once `stop` stopped waiting.
    func opened(_ pump: StreamPump) {
        let (closing, givenUp) = lock.withLock {
            streams[ObjectIdentifier(pump)] = pump
            return (stopping, finalStop)
        }
        if closing { pump.stream.close() }
        if givenUp { pump.abandon() }
    }

    /// A stream's response was freed.
    func closed(_ pump: StreamPump) {
        lock.withLock { _ = streams.removeValue(forKey: ObjectIdentifier(pump)) }
        drained.withLock { drained.broadcast() }
    }

    /// A request's handler is about to run; false once `stop` stopped
    /// waiting for handlers.
    func handlingBegan(_ exchange: HTTPExchange) -> Bool {
        lock.withLock {
            guard !finalStop else { return false }
            handling[ObjectIdentifier(exchange)] = exchange
            return true
        }
    }

    /// A request's handler answered (or was given up on).
    func handlingEnded(_ exchange: HTTPExchange) {
        lock.withLock { _ = handling.removeValue(forKey: ObjectIdentifier(exchange)) }
        drained.withLock { drained.broadcast() }
    }

    /// Pulls every waiting stream once (the ticker's thread).
    private func tick() {
        for pump in lock.withLock({ Array(streams.values) }) { pump.tick() }
    }
}
