import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// What a stranger's connection sends once connected: an opening burst,
/// then one byte of `drip` every `dripIntervalSeconds` (then `dripForever`
/// for good, if set), and `floodBytes` random bytes after the opening, as
/// fast as the socket takes them for `floodSeconds`.
struct StrangerScript: Sendable {
    /// Sent at once after the connect.
    var opening: [UInt8] = []
    /// Sent one byte at a time, the first right after the opening.
    var drip: [UInt8] = []
    /// Sent one at a time after `drip`, for as long as the connection is held.
    var dripForever: UInt8?
    var dripIntervalSeconds = 3.0
    /// Random bytes that follow the opening, sent without blocking.
    var floodBytes = 0
    /// How long after the connect the flood may go on.
    var floodSeconds = 5.0

    /// Connects and sends nothing.
    static let silent = StrangerScript()
}

/// One connection of a `ConnectionSwarm` and what became of it: a record
/// without the socket, so that a copy kept for the report holds no descriptor open.
struct StrangerConnection {
    /// How it ended up, as far as the benchmark could tell.
    enum Outcome: Equatable {
        /// The TCP connect is under way.
        case connecting
        /// Connected and not closed by the daemon (so far).
        case open
        /// The connect failed with this `errno` (`ECONNREFUSED` ...).
        case connectFailed(Int32)
        /// The connect did not finish in time (the listen backlog is full, say).
        case connectTimedOut
        /// The daemon closed it this many seconds after the connect, by FIN or by reset.
        case closedByDaemon(seconds: Double, reset: Bool)
    }

    /// Which group of the swarm it belongs to.
    var tag: String
    var script: StrangerScript
    var outcome = Outcome.connecting
    var connectStarted: ContinuousClock.Instant
    var connectedAt: ContinuousClock.Instant?
    /// Bytes sent and received.
    var sent = 0
    var received = 0
    /// The first bytes the daemon sent (up to 512), e.g. an HTTP status line.
    var firstBytes: [UInt8] = []
    var dripSent = 0
    var nextDrip: ContinuousClock.Instant?
    /// Bytes of the opening and flood still to send.
    var floodRemaining = 0
    var openingRemaining: ArraySlice<UInt8> = []

    /// True while it holds a connection the daemon has not closed.
    var isOpen: Bool { outcome == .open }

    /// True once the daemon closed it.
    var closedByDaemon: Bool {
        if case .closedByDaemon = outcome { return true }
        return false
    }

    /// Seconds from the connect until the daemon closed it, if it did.
    var secondsUntilClosed: Double? {
        if case .closedByDaemon(let seconds, _) = outcome { return seconds }
        return nil
    }

    /// True while there is an opening or flood byte left to send in time.
    func wantsToWrite(at now: ContinuousClock.Instant) -> Bool {
        guard isOpen else { return false }
        if !openingRemaining.isEmpty { return true }
        guard floodRemaining > 0, let connectedAt else { return false }
        return (now - connectedAt).seconds < script.floodSeconds
    }

    /// The first line the daemon sent, e.g. `HTTP/1.1 200 OK`.
    var firstLine: String? {
        guard !firstBytes.isEmpty else { return nil }
        let line = firstBytes.prefix { $0 != 13 && $0 != 10 }
        return String(decoding: line, as: UTF8.self)
    }

    /// Notes that the daemon closed it now.
    mutating func noteClosed(reset: Bool, at now: ContinuousClock.Instant) {
        outcome = .closedByDaemon(seconds: ((connectedAt.map { now - $0 }) ?? .zero).seconds, reset: reset)
    }
}

extension [StrangerConnection] {
    /// Connections that got through the TCP connect.
    var connected: Int { count { $0.connectedAt != nil } }
    /// Connects that failed at once (refused, reset ...).
    var connectFailures: Int {
        count {
            if case .connectFailed = $0.outcome { return true }
            return false
        }
    }
    /// Connects still unfinished at their deadline.
    var connectTimeouts: Int { count { $0.outcome == .connectTimedOut } }
    /// Connections the daemon closed.
    var closedByDaemon: [StrangerConnection] { filter(\.closedByDaemon) }
    /// Of those, closed with a reset.
    var resets: Int {
        count {
            if case .closedByDaemon(_, true) = $0.outcome { return true }
            return false
        }
    }
    /// Seconds from connect to close of every connection the daemon closed, ascending.
    var closeTimes: [Double] { compactMap(\.secondsUntilClosed).sorted() }
    /// Bytes sent over all of them.
    var bytesSent: Int { reduce(0) { $0 + $1.sent } }
    /// How many started with each first line (e.g. HTTP status line), most frequent first.
    var firstLines: [(line: String, count: Int)] {
        let counts = Dictionary(grouping: compactMap(\.firstLine), by: { $0 }).mapValues(\.count)
        return counts.sorted { $0.value > $1.value }.map { ($0.key, $0.value) }
    }
    /// Why connects failed, e.g. `Connection refused × 3`.
    var connectFailureReasons: String {
        let codes = compactMap { connection -> Int32? in
            if case .connectFailed(let code) = connection.outcome { return code }
            return nil
        }
        let counts = Dictionary(grouping: codes, by: { $0 }).mapValues(\.count)
        return counts.sorted { $0.value > $1.value }.map { "\(ProbeError.text($0.key)) × \($0.value)" }
            .joined(separator: ", ")
    }
}
