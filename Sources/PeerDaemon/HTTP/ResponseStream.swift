/// What a stream has when the server pulls it.
enum StreamChunk: Sendable, Hashable {
    /// Bytes to send now; never empty.
    case bytes([UInt8])
    /// Nothing now. The server stops pulling until the stream calls the
    /// `wake` it got in `attach(wake:)`, or until its next tick (every
    /// second), and keeps the connection suspended meanwhile.
    case later
    /// The response is complete: the server sends the terminating chunk.
    case end
    /// The stream cannot go on (a storage read failed). The server closes
    /// the connection without the terminating chunk, so the client sees the
    /// body cut off rather than complete; the text says why, for the log.
    case failed(String)
}

/// A response body produced while it is sent (`/changes`, `/events/all`),
/// in chunked encoding.
///
/// The server pulls a stream on its worker threads, one pull at a time,
/// never on libmicrohttpd's polling thread. `next` may read from SQLite,
/// but never waits for something to happen: it answers `.later` and calls
/// `wake` once it may have more. A stream that waits costs no thread.
///
/// ```swift
/// final class Greeting: ResponseStream {
///     private let sent = Mutex(false)
///     func next(maximum: Int) -> StreamChunk {
///         sent.withLock { sent in
///             defer { sent = true }
///             return sent ? .end : .bytes(Array("hello\n".utf8))
///         }
///     }
///     func close() {}
/// }
/// ```
protocol ResponseStream: AnyObject, Sendable {
    /// Called once, before the first `next`: `wake` asks the server to pull
    /// again after `.later`. It may be called on any thread, at any time,
    /// also after the response is over.
    func attach(wake: @escaping @Sendable () -> Void)
    /// The next bytes, at most `maximum`, or why there are none.
    func next(maximum: Int) -> StreamChunk
    /// The server is stopping or the response is over: a stream that can
    /// end at any point (the change stream) answers `.end` once what it
    /// has pending is sent; one that cannot (`/events/all` half sent)
    /// answers `.failed`.
    func close()
}

extension ResponseStream {
    /// A stream that never answers `.later` needs no wake-up.
    func attach(wake: @escaping @Sendable () -> Void) {}
}
