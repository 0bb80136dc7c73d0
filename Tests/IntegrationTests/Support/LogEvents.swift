import Foundation
import SyncProtocol
import TestSupport

/// A daemon's typed log events (docs/operations.md "Log events"), parsed
/// from its captured stderr: tests key on the event name and its fields,
/// never on the human-readable message.
///
/// ```swift
/// #expect(b.waitForEvent(.peerIdentified, ["peer": aID]))
/// #expect(a.events(.connectionRefused, ["cause": "cluster_key_mismatch"]).count == 1)
/// ```
extension OutputCapture {
    /// Every record logged so far, in order.
    var events: [LogRecord] { lines.compactMap { LogRecord(parsing: $0) } }

    /// The records of `event` whose fields hold every one of `fields`.
    func events(_ event: LogEvent, _ fields: [String: String] = [:]) -> [LogRecord] {
        LogRecord.records(in: lines, event, fields)
    }

    /// Waits until a record of `event` with `fields` (and passing `check`) is logged.
    func waitForEvent(
        _ event: LogEvent, _ fields: [String: String] = [:], timeout: Duration = .seconds(30),
        where check: @escaping (LogRecord) -> Bool = { _ in true }
    ) -> Bool {
        wait(timeout: timeout) { lines in
            lines.contains { line in LogRecord(parsing: line).map { $0.matches(event, fields) && check($0) } ?? false }
        }
    }
}

extension Daemon {
    /// Every record logged so far, in order.
    var events: [LogRecord] { child.stderr.events }

    /// The records of `event` whose fields hold every one of `fields`.
    func events(_ event: LogEvent, _ fields: [String: String] = [:]) -> [LogRecord] {
        child.stderr.events(event, fields)
    }

    /// Waits until a record of `event` with `fields` (and passing `check`) is logged.
    func waitForEvent(
        _ event: LogEvent, _ fields: [String: String] = [:], timeout: Duration = .seconds(30),
        where check: @escaping (LogRecord) -> Bool = { _ in true }
    ) -> Bool {
        child.stderr.waitForEvent(event, fields, timeout: timeout, where: check)
    }
}
