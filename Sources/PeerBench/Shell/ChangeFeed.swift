import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A receiver's change stream (`GET /changes`, Server-Sent Events) held
/// open on its own thread for a whole phase, noting when each event, by
/// its `replica_event_id`, arrived (monotonic ns).
///
/// ```swift
/// let feed = try ChangeFeed(port: httpPortOfB, name: "B")
/// let arrived = feed.waitForArrival(of: id, until: .now + .seconds(10))
/// feed.close()
/// ```
final class ChangeFeed: Sendable {
    /// For messages: whose stream this is.
    let name: String
    private let arrivals = Mutex<[String: UInt64]>([:])
    private let status = Mutex<FeedStatus>(FeedStatus())
    private let arrived = DispatchSemaphore(value: 0)
    private let opened = DispatchSemaphore(value: 0)
    private let ended = DispatchSemaphore(value: 0)

    /// Opens the stream (new events only) and returns once its `200` head
    /// arrived; throws when that takes more than `seconds`.
    init(port: UInt16, name: String, seconds: Double = 10) throws {
        self.name = name
        let thread = Thread { [self] in
            follow(port: port, seconds: seconds)
            ended.signal()
        }
        thread.name = "change-feed-\(name)"
        thread.start()
        _ = opened.wait(timeout: .now() + seconds + 1)
        let now = status.withLock { $0 }
        guard now.open else {
            close()
            throw ProbeError.closed("\(name)'s change stream did not open: \(now.failure ?? "no answer")")
        }
    }

    /// When the event `id` arrived; waits for it until `deadline` (nil: not seen).
    /// Forgets the event once returned.
    func waitForArrival(of id: String, until deadline: ContinuousClock.Instant) -> UInt64? {
        while true {
            if let time = arrivals.withLock({ $0.removeValue(forKey: id) }) { return time }
            let remaining = deadline - .now
            guard remaining > .zero, status.withLock({ $0.failure == nil }) else { return nil }
            _ = arrived.wait(timeout: .now() + min(remaining.seconds, 0.5))
        }
    }

    /// Why the stream broke off, nil while it is open.
    var failure: String? { status.withLock { $0.failure } }

    /// Ends the stream and waits (up to 2 s) for its thread.
    func close() {
        status.withLock { $0.stopRequested = true }
        _ = ended.wait(timeout: .now() + 2)
    }

    /// The thread: opens the stream, then reads events until `close` or the end.
    private func follow(port: UInt16, seconds: Double) {
        do {
            let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
            let socket = try ProbeSocket.connect(port: port, seconds: seconds)
            let request = "GET /changes HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nAccept: text/event-stream\r\n\r\n"
            try socket.sendAll(Array(request.utf8), until: deadline)
            var reader = HTTPReader(socket: socket, deadline: deadline)
            let head = try reader.head()
            guard head.status == 200 else { throw ProbeError.malformed("GET /changes: \(head.statusLine)") }
            status.withLock { $0.open = true }
            opened.signal()
            try read(
                socket, chunked: head.headers["transfer-encoding"]?.lowercased() == "chunked", after: reader.buffer)
        } catch {
            status.withLock { $0.failure = "\(error)" }
            opened.signal()
            arrived.signal()
        }
    }

    private func read(_ socket: ProbeSocket, chunked: Bool, after first: [UInt8]) throws {
        var decoder = ChunkedBody()
        var raw = first
        var text: [UInt8] = []
        var scratch = [UInt8](repeating: 0, count: 64 << 10)
        while !status.withLock({ $0.stopRequested }) {
            if chunked {
                text += try decoder.decode(&raw)
            } else {
                text += raw
                raw.removeAll()
            }
            noteEvents(in: &text)
            guard socket.wait(for: Int16(POLLIN), until: .now + .milliseconds(200)) != 0 else { continue }
            switch socket.receive(into: &scratch) {
            case .moved(let count): raw += scratch[..<count]
            case .wouldBlock: continue
            case .ended: throw ProbeError.closed("\(name)'s change stream ended")
            case .failed(let code): throw ProbeError.system("\(name)'s change stream", code)
            }
        }
    }

    private static let idMarker = Array(#""replica_event_id":""#.utf8)

    /// Takes every complete event block off the front of `text` and notes its event's arrival.
    private func noteEvents(in text: inout [UInt8]) {
        var start = 0
        let now = monotonicNanoseconds()
        var seen: [String] = []
        while let end = HTTPReader.find([10, 10], in: text, from: start) {
            if let marker = HTTPReader.find(ChangeFeed.idMarker, in: Array(text[start..<end]), from: 0) {
                let idStart = start + marker + ChangeFeed.idMarker.count
                if let quote = text[idStart..<end].firstIndex(of: UInt8(ascii: "\"")) {
                    seen.append(String(decoding: text[idStart..<quote], as: UTF8.self))
                }
            }
            start = end + 2
        }
        guard start > 0 else { return }
        text.removeFirst(start)
        guard !seen.isEmpty else { return }
        arrivals.withLock { arrivals in
            for id in seen { arrivals[id] = now }
        }
        arrived.signal()
    }
}

/// How a `ChangeFeed`'s stream stands.
private struct FeedStatus {
    var open = false
    var failure: String?
    var stopRequested = false
}
