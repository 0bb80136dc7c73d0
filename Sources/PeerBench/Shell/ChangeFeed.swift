import DaemonClient
import Foundation
import Synchronization

/// A receiver's change stream (`GET /changes`) held open on its own thread
/// for a whole phase, noting when each event, by its `replica_event_id`,
/// arrived (monotonic ns).
final class ChangeFeed: Sendable {
    /// For messages: whose stream this is.
    let name: String
    private let stream: EventStream
    private let arrivals = Mutex<(times: [String: UInt64], failure: String?)>(([:], nil))
    private let arrived = DispatchSemaphore(value: 0)
    private let ended = DispatchSemaphore(value: 0)

    /// Opens the stream (new events only); throws unless it answers 200.
    init(_ api: DaemonEndpoint, name: String) throws {
        self.name = name
        stream = try api.events("/changes")
        guard stream.status == 200 else {
            stream.close()
            throw ProbeError.malformed("\(name)'s GET /changes: HTTP \(stream.status)")
        }
        let thread = Thread { [self] in
            follow()
            ended.signal()
        }
        thread.name = "change-feed-\(name)"
        thread.start()
    }

    /// When the event `id` arrived; waits for it until `deadline` (nil: not seen). Forgets it once returned.
    func waitForArrival(of id: String, until deadline: ContinuousClock.Instant) -> UInt64? {
        while true {
            let (time, broken) = arrivals.withLock { ($0.times.removeValue(forKey: id), $0.failure != nil) }
            if let time { return time }
            let remaining = deadline - .now
            guard remaining > .zero, !broken else { return nil }
            _ = arrived.wait(timeout: .now() + min(remaining.seconds, 0.5))
        }
    }

    /// Why the stream broke off, nil while it is open.
    var failure: String? { arrivals.withLock { $0.failure } }

    /// Ends the stream and waits (up to 2 s) for its thread.
    func close() {
        arrivals.withLock { $0.failure = $0.failure ?? "closed" }
        stream.close()
        _ = ended.wait(timeout: .now() + 2)
    }

    private static let idMarker = #""replica_event_id":""#

    private func follow() {
        do {
            while let event = try stream.next() {
                let now = monotonicNanoseconds()
                guard let marker = event.data.range(of: Self.idMarker),
                    let quote = event.data[marker.upperBound...].firstIndex(of: "\"")
                else { continue }
                let id = String(event.data[marker.upperBound..<quote])
                arrivals.withLock { $0.times[id] = now }
                arrived.signal()
            }
            arrivals.withLock { $0.failure = $0.failure ?? "\(name)'s change stream ended" }
        } catch {
            arrivals.withLock { $0.failure = $0.failure ?? "\(name)'s change stream: \(error)" }
        }
        arrived.signal()
    }
}
