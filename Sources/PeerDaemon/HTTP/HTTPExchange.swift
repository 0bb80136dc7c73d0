import CMicroHTTPD
import Foundation

/// One request on its connection, from its headers to its response; kept
/// in libmicrohttpd's per-request pointer between calls of the access
/// handler, and by the worker that runs the handler.
///
/// The body is only touched on libmicrohttpd's polling thread, while the
/// request is `receiving`; `state` only with `lock` held. So the worker
/// and the polling thread never both act on the connection: the worker
/// resumes it once, and only from `handling`.
final class HTTPExchange: @unchecked Sendable {
    enum State {
        /// The body is arriving.
        case receiving
        /// Refused before a handler saw it (413); nothing more happens.
        case refused
        /// The connection is suspended while a worker runs the handler.
        case handling
        /// The handler answered and the connection is resumed: the next
        /// call of the access handler queues the response.
        case answered(HTTPResponse)
        /// The server stopped waiting for the handler (shutdown): the
        /// connection is resumed and gets 503; the handler's answer is dropped.
        case abandoned
        /// A response is queued.
        case responded
        /// libmicrohttpd is done with the request.
        case finished
    }

    let connection: OpaquePointer
    /// The body so far (while `receiving`).
    var body: [UInt8] = []
    private let lock = NSLock()
    private var state = State.receiving

    init(connection: OpaquePointer) {
        self.connection = connection
    }

    var isReceiving: Bool {
        lock.withLock {
            if case .receiving = state { return true }
            return false
        }
    }

    /// The body is refused; later calls of the access handler do nothing.
    func refuse() {
        lock.withLock { state = .refused }
    }

    /// The request is complete: suspends the connection (on the polling
    /// thread, inside the access handler) until `answer` or `abandon`.
    func beginHandling() {
        lock.withLock {
            guard case .receiving = state else { preconditionFailure("handling a request in state \(state)") }
            state = .handling
            MHD_suspend_connection(connection)
        }
    }

    /// The handler's response (on a worker): resumes the connection so
    /// that libmicrohttpd calls the access handler again. False when the
    /// server gave up on the request meanwhile.
    @discardableResult
    func answer(_ response: HTTPResponse) -> Bool {
        lock.withLock {
            guard case .handling = state else { return false }
            state = .answered(response)
            MHD_resume_connection(connection)
            return true
        }
    }

    /// Shutdown ran out of time for the handler: resumes the connection
    /// with a 503 to come. False when it was answered already.
    @discardableResult
    func abandon() -> Bool {
        lock.withLock {
            guard case .handling = state else { return false }
            state = .abandoned
            MHD_resume_connection(connection)
            return true
        }
    }

    /// What the access handler does when called with no more body: the
    /// response to queue now, if any, moving on to `responded`.
    enum Step {
        /// The request just became complete: run the handler.
        case handle
        /// Queue this response.
        case respond(HTTPResponse)
        /// Nothing to do in this call.
        case wait
    }

    func nextStep() -> Step {
        lock.withLock {
            switch state {
            case .receiving:
                return .handle
            case .answered(let response):
                state = .responded
                return .respond(response)
            case .abandoned:
                state = .responded
                return .respond(.error(503, "shutting_down", "the daemon is shutting down"))
            case .refused, .handling, .responded, .finished:
                return .wait
            }
        }
    }

    /// libmicrohttpd is done with the request (completed callback).
    func finish() {
        lock.withLock { state = .finished }
    }
}
