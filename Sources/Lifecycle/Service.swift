import Synchronization

/// A long-running part of a process (the storage executor, sync, discovery,
/// the HTTP API), in the shape swift-service-lifecycle gives them: `run()`
/// does the work until its task is cancelled, then stops gracefully and
/// returns. A `ServiceGroup` starts services in order and stops them in
/// reverse.
///
/// ```swift
/// struct Heartbeat: Service {
///     let name = "heartbeat"
///     func run() async throws {
///         while !Task.isCancelled { print("alive"); try? await Task.sleep(for: .seconds(1)) }
///     }
/// }
/// ```
public protocol Service: Sendable {
    /// For the log: `storage`, `gossip`, `discovery`, `http`.
    var name: String { get }
    /// Runs until the task is cancelled, then stops and returns; throws
    /// when it cannot run at all.
    func run() async throws
}

/// Waiting for the current task to be cancelled.
public enum Cancellation {
    /// Returns once the current task is cancelled (at once if it already is).
    public static func wait() async {
        let waiter = Waiter()
        await withTaskCancellationHandler {
            await withCheckedContinuation { waiter.park($0) }
        } onCancel: {
            waiter.cancel()
        }
    }

    /// The parked task and whether it was cancelled, set from two sides in either order.
    private final class Waiter: Sendable {
        private let state = Mutex<(parked: CheckedContinuation<Void, Never>?, cancelled: Bool)>((nil, false))

        func park(_ continuation: CheckedContinuation<Void, Never>) {
            let resumeNow = state.withLock { state -> Bool in
                if state.cancelled { return true }
                state.parked = continuation
                return false
            }
            if resumeNow { continuation.resume() }
        }

        func cancel() {
            let parked = state.withLock { state -> CheckedContinuation<Void, Never>? in
                state.cancelled = true
                defer { state.parked = nil }
                return state.parked
            }
            parked?.resume()
        }
    }
}
