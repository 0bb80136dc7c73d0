import Foundation
import Testing

@testable import SyncProtocol

@Suite struct LogRecordTests {
    @Test func aLineCarriesTheEventNameAndParsesBackToTheSameRecord() throws {
        let record = LogRecord(
            .warning, .connectionClosed, "connection closed",
            [("conn", "7"), ("reason", #"peer said goodbye: "done" = a\b"#), ("note", "two\nlines"), ("empty", "")])
        #expect(record.line.hasPrefix("level=warning event=connection.closed msg=\"connection closed\" conn=7 "))
        let parsed = try #require(LogRecord(parsing: "ts=2026-12-03T18:00:00.000Z " + record.line))
        #expect(parsed.event == .connectionClosed && parsed.level == .warning)
        #expect(parsed.message == "connection closed")
        #expect(parsed["reason"] == #"peer said goodbye: "done" = a\b"#)
        #expect(parsed["note"] == "two\nlines" && parsed["empty"] == "" && parsed["conn"] == "7")
        #expect(parsed["ts"] == "2026-12-03T18:00:00.000Z")
        #expect(parsed.loggedAt == Date(timeIntervalSince1970: 1_796_320_800))
        #expect(parsed.matches(.connectionClosed, ["conn": "7"]) && !parsed.matches(.connectionClosed, ["conn": "8"]))
    }

    @Test func aLineWithoutAKnownEventIsNotARecord() {
        #expect(LogRecord(parsing: "level=info msg=hello") == nil)
        #expect(LogRecord(parsing: "level=info event=no.such.event msg=hello") == nil)
        #expect(LogRecord(parsing: "peerd: cannot open the database") == nil)
    }

    @Test func docsOperationsListsEveryEvent() throws {
        let docs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appending(path: "docs/operations.md")
        let text = try String(contentsOf: docs, encoding: .utf8)
        let missing = LogEvent.allCases.filter { !text.contains("| `\($0.rawValue)` |") }
        #expect(missing.isEmpty, "docs/operations.md \"Log events\" lacks \(missing.map(\.rawValue))")
    }

    @Test func everyEventNameIsUniqueAndDotted() {
        let names = LogEvent.allCases.map(\.rawValue)
        #expect(Set(names).count == names.count)
        #expect(names.allSatisfy { $0.allSatisfy { $0.isLowercase || $0 == "." || $0 == "_" } })
    }
}
