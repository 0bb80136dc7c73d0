import Dispatch
import Glibc
import Synchronization

/// Hands ``DiscoveryEvent``s from Avahi's poll thread to the listener on a
/// serial queue of its own, in order. The poll thread only enqueues, so a
/// listener may take its time or call ``MDNSDiscovery/stop()``; after
/// ``close()`` nothing more is delivered.
final class EventOutlet: Sendable {
    private struct State {
        var open = true
        /// The thread running the listener now, if any.
        var deliveringOn: pthread_t?
    }

    private let queue = DispatchQueue(label: "peersync.discovery.events")
    private let listener: @Sendable (DiscoveryEvent) -> Void
    private let state = Mutex(State())

    init(_ listener: @escaping @Sendable (DiscoveryEvent) -> Void) {
        self.listener = listener
    }

    /// Queues `events` for the listener.
    func send(_ events: [DiscoveryEvent]) {
        guard !events.isEmpty else { return }
        queue.async { [self] in
            for event in events {
                let open = state.withLock { state in
                    state.deliveringOn = state.open ? pthread_self() : nil
                    return state.open
                }
                guard open else { return }
                listener(event)
                state.withLock { $0.deliveringOn = nil }
            }
        }
    }

    /// Queues `event` for the listener.
    func send(_ event: DiscoveryEvent) { send([event]) }

    /// Stops delivery. Returns once no listener call is running, unless it
    /// is called from the listener itself.
    func close() {
        let inListener = state.withLock { state in
            state.open = false
            return state.deliveringOn.map { pthread_equal($0, pthread_self()) != 0 } ?? false
        }
        if !inListener { queue.sync {} }
    }
}
