import Foundation

extension LogRecord {
    /// The record one log line holds, as `line` writes it (a leading `ts=`
    /// or any other unknown field before `level` is kept as a field); nil
    /// for a line that is not a record: no known level or event.
    public init?(parsing line: some StringProtocol) {
        var pairs = LogRecord.pairs(of: Substring(line))
        guard let level = pairs.removeValue("level").flatMap(Level.init(rawValue:)),
            let event = pairs.removeValue("event").flatMap(LogEvent.init(rawValue:))
        else { return nil }
        let message = pairs.removeValue("msg") ?? ""
        self.init(level, event, message, pairs)
    }

    /// The records among `lines` of `event` whose fields hold every one of `fields`.
    public static func records(
        in lines: some Sequence<some StringProtocol>, _ event: LogEvent, _ fields: [String: String] = [:]
    ) -> [LogRecord] {
        lines.compactMap { LogRecord(parsing: $0) }.filter { $0.matches(event, fields) }
    }

    /// True when the record is of `event` and its fields hold every one of `fields`.
    public func matches(_ event: LogEvent, _ fields: [String: String] = [:]) -> Bool {
        self.event == event && fields.allSatisfy { self[$0.key] == $0.value }
    }

    /// When the daemon wrote the line: its `ts=` field, as `StandardErrorLog` writes it.
    public var loggedAt: Date? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return self["ts"].flatMap { formatter.date(from: $0) }
    }

    /// The `key=value` pairs of a line, unquoting quoted values.
    static func pairs(of line: Substring) -> [(String, String)] {
        var pairs: [(String, String)] = []
        var rest = line[...]
        while let equals = rest.firstIndex(of: "=") {
            let key = rest[..<equals].trimmingPrefix(while: { $0 == " " })
            rest = rest[rest.index(after: equals)...]
            var value = ""
            if rest.first == "\"" {
                rest = rest.dropFirst()
                var escaped = false
                while let character = rest.popFirst() {
                    if escaped {
                        value.append(character == "n" ? "\n" : character)
                        escaped = false
                    } else if character == "\\" {
                        escaped = true
                    } else if character == "\"" {
                        break
                    } else {
                        value.append(character)
                    }
                }
            } else {
                let end = rest.firstIndex(of: " ") ?? rest.endIndex
                value = String(rest[..<end])
                rest = rest[end...]
            }
            pairs.append((String(key), value))
        }
        return pairs
    }
}

extension [(String, String)] {
    fileprivate mutating func removeValue(_ key: String) -> String? {
        guard let index = firstIndex(where: { $0.0 == key }) else { return nil }
        return remove(at: index).1
    }
}
