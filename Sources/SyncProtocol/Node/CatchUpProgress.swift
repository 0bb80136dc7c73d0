/// One session's backlog, for the "catching up" log lines: from the moment
/// the peer is seen to hold events we lack until we hold them all.
///
/// Pure: the node feeds it what each message delivered and what is left,
/// with the time, and logs what it returns.
///
/// ```swift
/// var progress = CatchUpProgress(peer: "b3c1")
/// progress.observe(received: 0, remaining: 9_000, now: 0)          // nil: starts
/// progress.observe(received: 5_000, remaining: 4_000, now: 1_000)  // "catching up" ... rate=5000/s
/// progress.observe(received: 4_000, remaining: 0, now: 1_600)      // "caught up" received=9000 seconds=1.600
/// ```
struct CatchUpProgress: Sendable {
    /// At most one "catching up" line per this many milliseconds.
    static let reportEveryMs: Milliseconds = 1_000

    let peer: String
    private var startedAt: Milliseconds?
    private var received = 0
    private var reportedAt: Milliseconds = 0
    private var receivedWhenReported = 0

    init(peer: String) {
        self.peer = peer
    }

    /// True while a backlog is being received.
    var isCatchingUp: Bool { startedAt != nil }

    /// `received` events arrived (0 when only the cursors moved) and
    /// `remaining` are still missing; returns the line to log, if any.
    ///
    /// A catch-up starts when something is missing; it reports at most
    /// once a second and only when events arrived since the last report
    /// (a backlog that cannot be stored does not repeat forever); it ends
    /// with "caught up" when nothing is missing any more.
    mutating func observe(received newly: Int, remaining: UInt64, now: Milliseconds) -> LogRecord? {
        guard let startedAt else {
            guard remaining > 0 else { return nil }
            self.startedAt = now
            reportedAt = now
            received = newly
            receivedWhenReported = 0
            return nil
        }
        received += newly
        let elapsed = max(0, now - startedAt)
        if remaining == 0 {
            self.startedAt = nil
            return LogRecord(
                .info, .caughtUp, "caught up",
                [("peer", peer), ("received", "\(received)"), ("seconds", CatchUpProgress.seconds(elapsed))])
        }
        guard now - reportedAt >= CatchUpProgress.reportEveryMs, received > receivedWhenReported else { return nil }
        reportedAt = now
        receivedWhenReported = received
        return LogRecord(
            .info, .catchingUp, "catching up",
            [
                ("peer", peer), ("received", "\(received)"), ("remaining", "\(remaining)"),
                ("rate", CatchUpProgress.rate(received, overMs: elapsed)),
            ])
    }

    /// `1.600` for 1,600 ms.
    static func seconds(_ ms: Milliseconds) -> String {
        let fraction = String(ms % 1_000)
        return "\(ms / 1_000)." + String(repeating: "0", count: 3 - fraction.count) + fraction
    }

    /// Events per second, whole above 10 (`25900/s`), with one decimal below (`2.5/s`).
    static func rate(_ events: Int, overMs ms: Milliseconds) -> String {
        guard ms > 0 else { return "\(events)/s" }
        let tenths = (Int64(events) * 10_000 + ms / 2) / ms
        if tenths >= 100 { return "\((tenths + 5) / 10)/s" }
        return "\(tenths / 10).\(tenths % 10)/s"
    }
}

extension SyncNode {
    /// Logs a session's catch-up progress: what `received` brought and what is left.
    mutating func observeCatchUp(on id: ConnectionID, received: Int, now: Milliseconds) {
        guard
            let (peer, remaining) = sessions[id].flatMap({ session in
                session.peer.map { ($0.replicaID, session.progress.toReceive) }
            })
        else { return }
        observeCatchUp(on: id, peer: peer, received: received, remaining: remaining, now: now)
    }

    /// `observeCatchUp` with the session's peer and the events it has yet to receive, read by the caller.
    mutating func observeCatchUp(
        on id: ConnectionID, peer: String, received: Int, remaining: UInt64, now: Milliseconds
    ) {
        var progress = catchUps[id] ?? CatchUpProgress(peer: peer)
        if let record = progress.observe(received: received, remaining: remaining, now: now) {
            emit(record)
        }
        catchUps[id] = progress.isCatchingUp ? progress : nil
    }
}
