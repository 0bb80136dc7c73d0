import CMicroHTTPD
import Foundation
import Glibc

/// Moves one streamed response from its `ResponseStream` to its
/// connection without a thread of its own.
///
/// libmicrohttpd's polling thread calls `read` for the next piece of the
/// body. When nothing is buffered, `read` suspends the connection and a
/// worker pulls from the stream (which may read SQLite); the worker resumes
/// the connection once it has bytes or the end. When the stream answers
/// `.later`, the connection stays suspended until the stream's `wake` or
/// the server's tick starts the next pull.
///
/// `@unchecked Sendable`: `state`, `pending` and `ending` are only touched
/// with `lock` held, and only `read` (polling thread) suspends, only the
/// way out of `pulling` or `waiting` resumes, so the connection is resumed
/// exactly once per suspension.
final class StreamPump: @unchecked Sendable {
    enum State {
        /// libmicrohttpd may call `read`: bytes are buffered, the stream
        /// ended, or nothing was pulled yet.
        case sending
        /// The connection is suspended while a worker pulls. `woken`: the
        /// stream called `wake` meanwhile, so an answer of `.later` pulls again.
        case pulling(woken: Bool)
        /// The connection is suspended; the stream answered `.later`.
        case waiting
        /// Shutdown ran out of time: the connection is resumed and what is
        /// buffered is sent, then the body ends without its final chunk.
        case abandoned
        /// libmicrohttpd freed the response; nothing touches the connection.
        case finished
    }

    /// How the body ends once `pending` is sent.
    enum Ending: Equatable {
        case complete
        case failed(String)
    }

    let stream: any ResponseStream
    private let connection: OpaquePointer
    /// The connection's socket, looked at only while it is suspended.
    private let socket: Int32
    private let pool: WorkerPool
    private let pullBytes: Int
    /// Told why a stream failed, once.
    private let failed: @Sendable (String) -> Void
    /// Told when libmicrohttpd freed the response.
    private let finished: @Sendable (StreamPump) -> Void
    private let lock = NSLock()
    private var state = State.sending
    private var pending = PendingBytes()
    private var ending: Ending?

    init(
        stream: any ResponseStream, connection: OpaquePointer, pool: WorkerPool, pullBytes: Int,
        failed: @escaping @Sendable (String) -> Void, finished: @escaping @Sendable (StreamPump) -> Void
    ) {
        self.stream = stream
        self.connection = connection
        socket = peersync_http_connection_socket(connection)
        self.pool = pool
        self.pullBytes = pullBytes
        self.failed = failed
        self.finished = finished
    }

    /// libmicrohttpd's content reader (polling thread): copies up to
    /// `maximum` bytes to `buffer` and returns how many, 0 after suspending
    /// the connection for a pull, or one of the reader's end values.
    func read(into buffer: UnsafeMutableRawPointer, maximum: Int) -> Int {
        var failure: String?
        defer { if let failure { failed(failure) } }
        return lock.withLock {
            switch state {
            case .sending, .abandoned:
                if !pending.isEmpty { return pending.take(into: buffer, maximum: maximum) }
                switch ending {
                case .complete?:
                    return Int(peersync_http_end_of_stream)
                case .failed(let reason)?:
                    failure = reason
                    return endWithError()
                case nil:
                    if case .abandoned = state { return endWithError() }
                    MHD_suspend_connection(connection)
                    state = .pulling(woken: false)
                    pull()
                    return 0
                }
            case .pulling, .waiting, .finished:
                preconditionFailure("libmicrohttpd read a stream in state \(state)")
            }
        }
    }

    /// The stream may have more (any thread).
    func wake() {
        lock.withLock {
            switch state {
            case .waiting:
                state = .pulling(woken: false)
                pull()
            case .pulling:
                state = .pulling(woken: true)
            case .sending, .abandoned, .finished:
                break
            }
        }
    }

    /// The server's tick (every second): the stream is pulled if it waits,
    /// unless its client is gone. libmicrohttpd does not notice a client
    /// that closed a suspended connection, which would stay open until the
    /// next keepalive failed to send; such a stream ends at once instead.
    func tick() {
        lock.withLock {
            guard case .waiting = state else { return }
            if clientHungUp() {
                state = .abandoned
                MHD_resume_connection(connection)
            } else {
                state = .pulling(woken: false)
                pull()
            }
        }
    }

    /// Shutdown gives up on the stream: a suspended connection is resumed,
    /// and the body ends without its final chunk unless it ended already.
    func abandon() {
        lock.withLock {
            switch state {
            case .pulling, .waiting:
                state = .abandoned
                MHD_resume_connection(connection)
            case .sending:
                state = .abandoned
            case .abandoned, .finished:
                break
            }
        }
    }

    /// libmicrohttpd freed the response (polling thread).
    func finish() {
        lock.withLock { state = .finished }
        stream.close()
        finished(self)
    }

    /// Whether the client closed its side (`lock` held, connection
    /// suspended, so libmicrohttpd neither reads nor closes the socket).
    private func clientHungUp() -> Bool {
        guard socket >= 0 else { return false }
        var byte: UInt8 = 0
        let peeked = recv(socket, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
        return peeked == 0 || (peeked < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
    }

    /// Ends the body without its final chunk (`lock` held, polling thread).
    private func endWithError() -> Int {
        // libmicrohttpd 0.9.75 leaves a connection that a content reader
        // ended with an error after a resume in no epoll set, so nothing
        // visits it to close it until the idle-timeout scan reaches it,
        // which other connections can delay for as long as they are busy.
        // One with a timeout of its own is visited on every round.
        peersync_http_revisit_soon(connection)
        return Int(peersync_http_end_with_error)
    }

    /// Queues a pull on a worker (`lock` held, state `pulling`).
    private func pull() {
        let queued = pool.submit { [self] in
            let (bytes, outcome) = collect()
            deliver(bytes, outcome)
        }
        if !queued {
            // The pool stopped: only during shutdown, after libmicrohttpd stopped.
            state = .abandoned
            MHD_resume_connection(connection)
        }
    }

    /// Pulls until `pullBytes` are there or the stream has no more now (worker).
    private func collect() -> ([UInt8], StreamChunk) {
        var collected: [UInt8] = []
        while collected.count < pullBytes {
            switch stream.next(maximum: pullBytes - collected.count) {
            case .bytes(let bytes) where !bytes.isEmpty:
                collected += bytes
            case .bytes, .later:
                return (collected, .later)
            case let outcome:
                return (collected, outcome)
            }
        }
        return (collected, .bytes([]))
    }

    /// Hands a pull's result over and resumes the connection when there is
    /// something to send (worker).
    private func deliver(_ bytes: [UInt8], _ outcome: StreamChunk) {
        lock.withLock {
            guard case .pulling(let woken) = state else { return }  // abandoned meanwhile
            pending.append(bytes: bytes)
            switch outcome {
            case .end: ending = .complete
            case .failed(let reason): ending = .failed(reason)
            case .bytes, .later: break
            }
            if !pending.isEmpty || ending != nil {
                state = .sending
                MHD_resume_connection(connection)
            } else if woken {
                state = .pulling(woken: false)
                pull()
            } else {
                state = .waiting
            }
        }
    }
}
