import Foundation
import Synchronization

/// Listens on the shared store's notification channel on a thread of its
/// own and calls `onChange` whenever another relay committed events, and
/// after every (re)connection, when commits may have been missed. A lost
/// connection is made again every `retryMs`; `onChange` is never called
/// while the store cannot be reached.
///
/// ```swift
/// let listener = StoreListener(conninfo: url) { try? storage.catchUpSharedStore() }
/// listener.start()
/// ```
public final class StoreListener: Sendable {
    private let conninfo: String
    private let onChange: @Sendable () -> Void
    private let onState: @Sendable (_ connected: Bool, _ error: String?) -> Void
    private let retryMs: Int32
    private let stopped = Atomic<Bool>(false)
    private let state = Mutex<(connected: Bool, error: String?)>((false, nil))
    private let done = DispatchSemaphore(value: 0)

    /// `onState` hears each change between reachable and not, with the reason.
    public init(
        conninfo: String, retryMs: Int32 = 500,
        onState: @escaping @Sendable (_ connected: Bool, _ error: String?) -> Void = { _, _ in },
        onChange: @escaping @Sendable () -> Void
    ) {
        self.conninfo = conninfo
        self.retryMs = retryMs
        self.onState = onState
        self.onChange = onChange
    }

    /// Whether the listener holds a connection now, and else why not.
    public var reachability: (connected: Bool, error: String?) { state.withLock { $0 } }

    /// Starts the thread.
    public func start() {
        let thread = Thread { [self] in
            listen()
            done.signal()
        }
        thread.name = "peersync-store-listener"
        thread.start()
    }

    /// Stops the thread and waits for it (at most one wait interval).
    public func stop() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        done.wait()
    }

    private func listen() {
        var connected: Bool?
        while !stopped.load(ordering: .acquiring) {
            do {
                let db = try PostgresConnection(conninfo)
                try db.execute("LISTEN \(SiteJournal.channel)")
                state.withLock { $0 = (true, nil) }
                if connected != true { onState(true, nil) }
                connected = true
                onChange()
                while !stopped.load(ordering: .acquiring) {
                    var descriptor = pollfd(fd: db.socket, events: Int16(POLLIN), revents: 0)
                    let ready = poll(&descriptor, 1, retryMs)
                    guard ready > 0 else { continue }
                    if !(try db.notifications()).isEmpty { onChange() }
                }
            } catch {
                state.withLock { $0 = (false, "\(error)") }
                if connected != false { onState(false, "\(error)") }
                connected = false
                var nothing = pollfd(fd: -1, events: 0, revents: 0)
                _ = poll(&nothing, 0, retryMs)
            }
        }
    }
}
