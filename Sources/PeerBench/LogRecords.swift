import Foundation
import NetworkLab
import SyncProtocol

extension Sequence where Element: StringProtocol {
    /// The daemon's log records among these lines of `event` whose fields hold every one of `fields`.
    func records(_ event: LogEvent, _ fields: [String: String] = [:]) -> [LogRecord] {
        compactMap { LogRecord(parsing: $0) }.filter { record in
            record.event == event && fields.allSatisfy { record[$0.key] == $0.value }
        }
    }
}

extension LabLog {
    /// The records of `event` with every one of `fields` written so far.
    func records(_ event: LogEvent, _ fields: [String: String] = [:]) -> [LogRecord] {
        lines.records(event, fields)
    }
}

extension LogRecord {
    /// The record's `ts=`, as a date.
    var time: Date? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return self["ts"].flatMap(formatter.date(from:))
    }
}
