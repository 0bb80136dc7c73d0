import Foundation

/// One line of the daemon's log: a level, a stable event name, a
/// human-readable message and `key=value` fields.
public struct LogRecord: Sendable, Hashable {
    public enum Level: String, Sendable, Comparable {
        case debug, info, warning, error

        private var rank: Int {
            switch self {
            case .debug: 0
            case .info: 1
            case .warning: 2
            case .error: 3
            }
        }

        public static func < (lhs: Level, rhs: Level) -> Bool { lhs.rank < rhs.rank }
    }

    public var level: Level
    /// What the record reports; the key to match on, where `message` is for people.
    public var event: LogEvent
    public var message: String
    public var fields: [(String, String)]

    public init(_ level: Level, _ event: LogEvent, _ message: String, _ fields: [(String, String)] = []) {
        self.level = level
        self.event = event
        self.message = message
        self.fields = fields
    }

    /// The value of field `key`, if the record has it.
    public subscript(key: String) -> String? { fields.first { $0.0 == key }?.1 }

    /// `level=info event=peer.identified msg="peer identified" peer=ab12`,
    /// with values quoted when they hold spaces, quotes or `=`.
    public var line: String {
        var parts = ["level=\(level.rawValue)", "event=\(event.rawValue)", "msg=\(LogRecord.quoted(message))"]
        for (key, value) in fields { parts.append("\(key)=\(LogRecord.quoted(value))") }
        return parts.joined(separator: " ")
    }

    static func quoted(_ value: String) -> String {
        let plain = !value.isEmpty && !value.contains { $0 == " " || $0 == "\"" || $0 == "=" || $0.isNewline }
        if plain { return value }
        let escaped = value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n")
        return "\"\(escaped)\""
    }

    public static func == (lhs: LogRecord, rhs: LogRecord) -> Bool { lhs.line == rhs.line }
    public func hash(into hasher: inout Hasher) { hasher.combine(line) }
}
