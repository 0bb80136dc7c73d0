import SyncProtocol

/// Logs refused connections once per kind per interval instead of once
/// per connection, so a flood of strangers costs a few lines: the first
/// refusal of a kind is logged in full at once, the rest of that interval
/// are counted, and when the interval ends one summary line says how many
/// there were.
///
/// Pure: every call carries the time.
///
/// ```swift
/// var log = RefusalLog(intervalMs: 10_000)
/// log.refused(.handshakeDeadline, record, now: 0)      // record: log it
/// log.refused(.handshakeDeadline, record, now: 50)     // nil: counted
/// log.flush(now: 10_000)                                // [event=connections.refused kind=… count=1 …]
/// ```
struct RefusalLog: Sendable {
    private struct Window: Sendable {
        var endsAt: Int64
        var suppressed = 0
        var lastReason = ""
    }

    let intervalMs: Int64
    private var windows: [RefusalKind: Window] = [:]
    /// Refusals per kind since the start, for the metrics.
    private(set) var totals: [RefusalKind: Int] = [:]

    init(intervalMs: Int64) {
        self.intervalMs = intervalMs
    }

    /// A connection was refused: `record` when it should be logged now, `nil` when it is only counted.
    mutating func refused(_ kind: RefusalKind, _ record: LogRecord, reason: String, now: Int64) -> LogRecord? {
        totals[kind, default: 0] += 1
        if var window = windows[kind], now < window.endsAt {
            window.suppressed += 1
            window.lastReason = reason
            windows[kind] = window
            return nil
        }
        windows[kind] = Window(endsAt: now + intervalMs)
        return record
    }

    /// The summaries of intervals that ended by `now` with refusals left unlogged.
    mutating func flush(now: Int64) -> [LogRecord] {
        var records: [LogRecord] = []
        for kind in RefusalKind.allCases {
            guard let window = windows[kind], window.endsAt <= now else { continue }
            windows[kind] = nil
            guard window.suppressed > 0 else { continue }
            records.append(
                LogRecord(
                    .warning, .connectionsRefused, "connections refused",
                    [
                        ("kind", kind.rawValue), ("count", "\(window.suppressed)"),
                        ("seconds", "\(intervalMs / 1_000)"), ("last_reason", window.lastReason),
                    ]))
        }
        return records
    }

    /// When `flush` next has something to do.
    var nextFlushAt: Int64? { windows.values.map(\.endsAt).min() }
}
