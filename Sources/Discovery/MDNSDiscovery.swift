import CAvahi
import Synchronization

/// Publishes this replica as a `_peersync._tcp` service through the local
/// avahi-daemon, browses and resolves the others, and reports peers of the
/// same cluster as ``DiscoveryEvent``s.
///
/// ```swift
/// let discovery = MDNSDiscovery(
///     advertisement: MDNSAdvertisement(
///         replicaID: id, port: 4100, clusterFingerprint: key.fingerprint, protocolVersion: WireProtocol.version)
/// ) { event in
///     events.yield(event)  // hand over; the peer manager's owner acts on it
/// }
/// discovery.start()
/// …
/// discovery.stop()  // withdraws the service
/// ```
///
/// It never fails to start. Without a D-Bus system bus it says so once (a
/// `warning`) and tries again every ``retryInterval``; with a bus but no
/// avahi-daemon, it waits for the daemon; when the daemon restarts, it
/// reconnects and publishes again; on a name collision, it renames itself.
/// Static peers do not depend on any of it.
///
/// ## Threads
///
/// Avahi runs on its own thread (an `AvahiThreadedPoll`). Every Avahi
/// object (client, entry group, browser, resolvers, the retry timeout) and
/// every `var` below is touched only on that thread, from Avahi's callbacks,
/// or by ``start()`` before the thread runs and ``stop()`` after it has
/// ended, both under `lifecycle`. Nothing takes `avahi_threaded_poll_lock`:
/// work that must happen later is a poll timeout, which runs on the poll
/// thread too (and the lock must never be taken inside a callback: Avahi
/// asserts). That is why the class may be `@unchecked Sendable`. Events
/// leave the poll thread through an ``EventOutlet``, so the listener never
/// runs on it.
public final class MDNSDiscovery: @unchecked Sendable {
    /// What this node publishes. Its instance name is the first choice; after
    /// a collision Avahi's alternative (`NAME #2`) is used.
    public let advertisement: MDNSAdvertisement
    /// How long to wait before trying again to reach a D-Bus system bus.
    public let retryInterval: Duration

    enum Lifecycle {
        case idle
        case running
        case stopped
    }

    let lifecycle = Mutex(Lifecycle.idle)
    let outlet: EventOutlet

    // Poll-thread state (see "Threads").
    var poll: OpaquePointer?
    var retryTimeout: OpaquePointer?
    var client: OpaquePointer?
    var group: OpaquePointer?
    var browser: OpaquePointer?
    /// The name published now: the advertisement's, or its alternative after collisions.
    var instanceName: String
    var sightings: ServiceSightings
    /// Why mDNS is unavailable now, once a warning has said so.
    var outage: Outage?

    /// Why mDNS is unavailable.
    enum Outage: Equatable {
        case noBus
        case noDaemon
    }

    /// - Parameters:
    ///   - advertisement: what to publish.
    ///   - retryInterval: the wait between attempts to reach a D-Bus system bus.
    ///   - onEvent: called with each event, in order, on a serial queue of
    ///     the discovery's own (never on Avahi's thread).
    public init(
        advertisement: MDNSAdvertisement, retryInterval: Duration = .seconds(2),
        onEvent: @escaping @Sendable (DiscoveryEvent) -> Void
    ) {
        self.advertisement = advertisement
        self.retryInterval = retryInterval
        self.outlet = EventOutlet(onEvent)
        self.instanceName = advertisement.instanceName
        self.sightings = ServiceSightings(own: advertisement)
    }

    deinit {
        stop()
    }

    /// Starts Avahi's thread, which connects to the daemon, publishes and
    /// browses. Returns at once; a second call does nothing.
    public func start() {
        lifecycle.withLock { state in
            guard case .idle = state else { return }
            state = .running
            if let problem = advertisement.problem {
                outlet.send(.warning("mDNS: not publishing '\(advertisement.instanceName)': \(problem); browsing only"))
            }
            guard let poll = avahi_threaded_poll_new() else {
                outlet.send(.warning("mDNS unavailable: Avahi could not make its poll; static peers keep working"))
                return
            }
            self.poll = poll
            // The first connection attempt is a timeout due now, so that it runs on the poll thread.
            retryTimeout = addTimeout(to: poll, after: .zero) { _, userdata in
                MDNSDiscovery.from(userdata)?.reconnect()
            }
            if avahi_threaded_poll_start(poll) < 0 {
                outlet.send(.warning("mDNS unavailable: Avahi's poll thread did not start; static peers keep working"))
            }
        }
    }

    /// Stops browsing, withdraws the service (Avahi sends the goodbye) and
    /// ends Avahi's thread. After it returns no event is delivered. Call it
    /// from any thread but Avahi's (the listener's queue is fine).
    public func stop() {
        lifecycle.withLock { state in
            state = .stopped
            guard let poll else { return }
            avahi_threaded_poll_stop(poll)  // joins the thread: no callback runs after this
            if let client { avahi_client_free(client) }  // and its group, browser and resolvers
            client = nil
            group = nil
            browser = nil
            retryTimeout = nil  // the poll frees its timeouts
            avahi_threaded_poll_free(poll)
            self.poll = nil
        }
        outlet.close()
    }

    // MARK: - The client (poll thread only)

    /// Frees the current client, if any, and makes a new one.
    func reconnect() {
        if let client {
            avahi_client_free(client)
            if browser != nil { sightings.browsingRestarted() }
        }
        client = nil
        group = nil
        browser = nil
        var error: Int32 = 0
        // Avahi calls clientChanged inside avahi_client_new, before it returns.
        let made = avahi_client_new(
            avahi_threaded_poll_get(poll), cavahi_client_no_fail(),
            { client, state, userdata in MDNSDiscovery.from(userdata)?.clientChanged(client, state) },
            userdata, &error)
        guard let made else {
            // No D-Bus system bus: even NO_FAIL gives up at once. Try again later.
            client = nil
            enter(
                .noBus,
                warning: "mDNS unavailable: no D-Bus system bus (\(Self.describe(error)));"
                    + " static peers keep working; retrying every \(retryInterval.secondsText)")
            armRetry(after: retryInterval)
            return
        }
        client = made
    }

    private func clientChanged(_ changed: OpaquePointer?, _ state: AvahiClientState) {
        guard let changed else { return }
        client = changed
        switch state {
        case AVAHI_CLIENT_S_RUNNING:
            if outage != nil {
                outage = nil
                outlet.send(.info("avahi-daemon is available: publishing and browsing again"))
            }
            publish(on: changed)
            browse(on: changed)
        case AVAHI_CLIENT_S_COLLISION, AVAHI_CLIENT_S_REGISTERING:
            // The daemon is (re)naming the host: withdraw, and publish again on S_RUNNING.
            if let group { avahi_entry_group_reset(group) }
        case AVAHI_CLIENT_CONNECTING:
            enter(
                .noDaemon,
                warning: "mDNS unavailable: avahi-daemon is not running; static peers keep working;"
                    + " discovery starts when it does")
        case AVAHI_CLIENT_FAILURE:
            // The daemon went away (AVAHI_ERR_DISCONNECTED when it restarts) or the bus did:
            // every object of this client is dead. Make a new client once this callback returns.
            let error = avahi_client_errno(changed)
            outlet.send(.info("lost avahi-daemon (\(Self.describe(error))); reconnecting"))
            armRetry(after: .zero)
        default:
            break
        }
    }

    /// Warns about an outage once, until it ends or changes kind.
    private func enter(_ kind: Outage, warning: String) {
        guard outage != kind else { return }
        outage = kind
        outlet.send(.warning(warning))
    }

    // MARK: - Timeouts (poll thread, or before it runs)

    private func armRetry(after delay: Duration) {
        guard let poll, let retryTimeout else { return }
        var due = Self.dueTime(after: delay)
        avahi_threaded_poll_get(poll).pointee.timeout_update?(retryTimeout, &due)
    }

    private func addTimeout(
        to poll: OpaquePointer, after delay: Duration, _ callback: AvahiTimeoutCallback
    ) -> OpaquePointer? {
        let api = avahi_threaded_poll_get(poll)
        var due = Self.dueTime(after: delay)
        return api?.pointee.timeout_new?(api, &due, callback, userdata)
    }

    private static func dueTime(after delay: Duration) -> timeval {
        var due = timeval()
        let (seconds, attoseconds) = delay.components
        avahi_elapse_time(&due, UInt32(clamping: seconds * 1000 + attoseconds / 1_000_000_000_000_000), 0)
        return due
    }

    // MARK: - Userdata

    /// This object as Avahi's userdata. It outlives every registration:
    /// ``stop()``, which `deinit` calls, ends the poll thread first.
    var userdata: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

    static func from(_ userdata: UnsafeMutableRawPointer?) -> MDNSDiscovery? {
        userdata.map { Unmanaged<MDNSDiscovery>.fromOpaque($0).takeUnretainedValue() }
    }

    /// Avahi's text for an error code, with the code.
    static func describe(_ error: Int32) -> String {
        "\(avahi_strerror(error).map { String(cString: $0) } ?? "error") \(error)"
    }
}

extension Duration {
    /// `2 s`, `0.5 s`.
    var secondsText: String {
        let (seconds, attoseconds) = components
        let milliseconds = attoseconds / 1_000_000_000_000_000
        return milliseconds == 0 ? "\(seconds) s" : "\(Double(seconds) + Double(milliseconds) / 1000) s"
    }
}
