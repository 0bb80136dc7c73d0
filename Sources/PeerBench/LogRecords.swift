import NetworkLab
import SyncProtocol

extension Sequence where Element: StringProtocol {
    /// The daemon's log records among these lines of `event` whose fields hold every one of `fields`.
    func records(_ event: LogEvent, _ fields: [String: String] = [:]) -> [LogRecord] {
        LogRecord.records(in: self, event, fields)
    }
}

extension LabLog {
    /// The records of `event` with every one of `fields` written so far.
    func records(_ event: LogEvent, _ fields: [String: String] = [:]) -> [LogRecord] {
        lines.records(event, fields)
    }
}
