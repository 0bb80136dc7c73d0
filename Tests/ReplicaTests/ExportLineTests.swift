import Foundation
import Testing

@testable import Replica

/// The fast path of `peerd import` (`ExportLine`) against the general
/// parser (`EventJSON.event(fromLine:)`): whenever the fast path reads a
/// line, the general path reads the same event from it.
@Suite("Export line fast path")
struct ExportLineTests {
    private static let event = Event(
        eventID: UUID(uuidString: "6F1C2A9E-3B4D-4E5F-8A7B-0C1D2E3F4A5B")!,
        feed: FeedID(replicaID: "origin-1", scope: "default"), seq: 3, timeMs: 1_700_000_000_000,
        entityType: "item", entityID: "i1", payload: #"{"name":"Nuts","type":"Renamed"}"#)

    private static let exported = EventJSON.line(for: event, offset: 17, arrivalTimeMs: 1_700_000_000_123)

    /// What `peerd import` did before the fast path: the line's text up to a
    /// NUL (`String(cString:)`), trimmed, blank lines skipped, the general parser.
    private static func general(_ bytes: [UInt8]) -> Result<Event?, EventJSONError> {
        let text = (bytes + [0]).withUnsafeBufferPointer { pointer in
            pointer.withMemoryRebound(to: CChar.self) { String(cString: $0.baseAddress!) }
        }
        let line = text.trimmingCharacters(in: .whitespacesAndNewlines)
        if line.isEmpty { return .success(nil) }
        do {
            return .success(try EventJSON.event(fromLine: line))
        } catch {
            return .failure(error as! EventJSONError)
        }
    }

    private static func fast(_ bytes: [UInt8]) -> Event? {
        bytes.withUnsafeBufferPointer { ExportLine.event($0) }
    }

    private static func full(_ bytes: [UInt8]) -> Result<Event?, EventJSONError> {
        do {
            return .success(try bytes.withUnsafeBufferPointer { try EventJSON.event(fromLineBytes: $0) })
        } catch {
            return .failure(error as! EventJSONError)
        }
    }

    /// `exported` with `old` replaced by `new` (which must occur once).
    private static func variant(_ old: String, _ new: String) -> String {
        precondition(exported.components(separatedBy: old).count == 2, old)
        return exported.replacingOccurrences(of: old, with: new)
    }

    /// Lines the fast path must read itself.
    static let fastLines: [String] = [
        exported,
        EventJSON.line(for: event, offset: nil, arrivalTimeMs: nil),
        variant("6f1c2a9e-3b4d-4e5f-8a7b-0c1d2e3f4a5b", "6F1C2A9E-3B4D-4E5F-8A7B-0C1D2E3F4A5B"),
        variant(#""name":"Nuts""#, #""name":"Écrous 🔩 \"M8\"\n\u001f""#),
        variant(#""entity_id":"i1""#, #""entity_id":"Ärmel ✓""#),
        variant(#""replica_time_ms":1700000000000"#, #""replica_time_ms":-5"#),
        variant(#""replica_write_offset":3"#, #""replica_write_offset":999999999999999999"#),
        variant(#""scope":"default""#, #""scope":"""#),
        variant(#"{"name":"Nuts","type":"Renamed"}"#, #"{"a":[1,{"b":null}],"c":true,"d":false}"#),
        variant(#"{"name":"Nuts","type":"Renamed"}"#, "{}"),
        exported + "\n",
        exported + "\r\n",
        exported + " \t",
    ]

    /// Lines the fast path leaves to the general parser (read or refused there).
    static let generalLines: [String] = [
        "",
        "   ",
        " " + exported,
        variant(#""replica_id":"origin-1""#, #""replica_id":"tablet \"7\"""#),
        variant(#""entity_id":"i1""#, #""entity_id":"i\u0031""#),
        variant(#""name":"Nuts""#, #""name":"N\u00fcsse""#),
        variant(#""name":"Nuts","type":"Renamed""#, #""type":"Renamed","name":"Nuts""#),
        variant(#""name":"Nuts""#, #""name" : "Nuts""#),
        variant(#""name":"Nuts""#, #""name":"Nuts","extra":1.5"#),
        variant(#","scope":"default""#, ""),
        variant(#""scope":"default""#, #""scope":null"#),
        variant(#","server_offset":17"#, ""),
        variant(#""server_offset":17"#, #""server_offset":"seventeen""#),
        variant(#""server_offset":17"#, #""server_offset":1.5"#),
        variant(#","server_time_ms":1700000000123"#, #","server_time_ms":1,"note":"extra""#),
        variant(#","entity_type":"item""#, ""),
        variant(#"{"replica_event_id""#, #"{"x":1,"replica_event_id""#),
        variant("6f1c2a9e-3b4d-4e5f-8a7b-0c1d2e3f4a5b", "not-a-uuid"),
        variant("6f1c2a9e-3b4d-4e5f-8a7b-0c1d2e3f4a5b", "6f1c2a9e3b4d4e5f8a7b0c1d2e3f4a5b"),
        variant("6f1c2a9e-3b4d-4e5f-8a7b-0c1d2e3f4a5b", "6f1c2a9e-3b4d-4e5f-8a7b-0c1d2e3f4a5g"),
        variant(#""replica_write_offset":3"#, #""replica_write_offset":0"#),
        variant(#""replica_write_offset":3"#, #""replica_write_offset":-3"#),
        variant(#""replica_write_offset":3"#, #""replica_write_offset":-0"#),
        variant(#""replica_write_offset":3"#, #""replica_write_offset":03"#),
        variant(#""replica_write_offset":3"#, #""replica_write_offset":3.0"#),
        variant(#""replica_write_offset":3"#, #""replica_write_offset":3e0"#),
        variant(#""replica_write_offset":3"#, #""replica_write_offset":"3""#),
        variant(#""replica_write_offset":3"#, #""replica_write_offset":1000000000000000000"#),
        variant(#""replica_write_offset":3"#, #""replica_write_offset":99999999999999999999"#),
        variant(#""replica_time_ms":1700000000000"#, #""replica_time_ms":1.7e12"#),
        variant(#"{"name":"Nuts","type":"Renamed"}"#, #"{"type":"Renamed","name":"Nuts"}"#),
        variant(#"{"name":"Nuts","type":"Renamed"}"#, #"{"name":"Nuts","type":"Renamed","q":1.0}"#),
        variant(#"{"name":"Nuts","type":"Renamed"}"#, #""just text""#),
        variant(#"{"name":"Nuts","type":"Renamed"}"#, "[1,2]"),
        variant(#"{"name":"Nuts","type":"Renamed"}"#, #"{"name":"Nuts","name":"Bolts"}"#),
        variant(#"{"name":"Nuts","type":"Renamed"}"#, #"{"a":1,}"#),
        String(exported.dropLast()),
        exported + "}",
        exported + ",",
        "[" + exported + "]",
        "not json at all",
    ]

    @Test("Lines in the shape peerd export writes take the fast path and read as the general parser reads them")
    func fastLinesAgree() throws {
        for text in Self.fastLines {
            let bytes = Array(text.utf8)
            var trimmed = bytes[...]
            while let last = trimmed.last, [0x20, 0x0A, 0x0D, 0x09].contains(last) { trimmed = trimmed.dropLast() }
            let fast = try #require(Self.fast(Array(trimmed)), "fast path refused: \(text)")
            #expect(try Self.general(bytes).get() == fast, "\(text)")
            #expect(try Self.full(bytes).get() == fast, "\(text)")
        }
    }

    @Test("Other lines are left to the general parser, with its result or its error")
    func generalLinesAgree() {
        for text in Self.generalLines {
            let bytes = Array(text.utf8)
            #expect(Self.fast(bytes) == nil, "fast path read: \(text)")
            let expected = Self.general(bytes)
            let got = Self.full(bytes)
            #expect(String(describing: got) == String(describing: expected), "\(text)")
        }
    }

    @Test("Bytes that are not valid UTF-8, and a NUL byte, are read as the text of the line was read")
    func invalidBytes() {
        let valid = Array(Self.exported.utf8)
        let nameAt = valid.firstRange(of: Array("Nuts".utf8))!.lowerBound
        let idAt = valid.firstRange(of: Array("i1".utf8))!.lowerBound
        var lines: [[UInt8]] = []
        for (position, bad) in [(nameAt, [0xFF] as [UInt8]), (nameAt, [0xC3]), (idAt, [0xE2, 0x9C]), (idAt, [0x00])] {
            var line = valid
            line.insert(contentsOf: bad, at: position)
            lines.append(line)
        }
        lines.append(valid + [0x00] + Array("garbage".utf8))
        for bytes in lines {
            if let fast = Self.fast(bytes) {
                #expect((try? Self.general(bytes).get()) == fast)
            }
            #expect(String(describing: Self.full(bytes)) == String(describing: Self.general(bytes)), "\(bytes)")
        }
        // Only the trailing-NUL line reads as an event (the text stops at the NUL); the rest are repaired, or refused.
        #expect((try? Self.full(lines[lines.count - 1]).get()) == Self.event)
        #expect(Self.fast(lines[0]) == nil)
        #expect(Self.fast(lines[3]) == nil)
    }

    @Test("Every line of a generated export takes the fast path and reads back the event written")
    func generatedExportRoundTrips() throws {
        var random = SystemRandomNumberGenerator()
        let names = ["Bolts", "Écrous \"M8\"", "Schrauben ✓", "wall plug\tbox", "🔩", "back\\slash", ""]
        for index in 1...500 {
            let name = names[index % names.count]
            let payload: String
            switch index % 3 {
            case 0: payload = #"{"name":"# + EventJSON.quoted(name) + #","quantity":\#(index),"type":"Created"}"#
            case 1:
                payload = #"{"quantity":\#(Int64.random(in: -1000...1000, using: &random)),"type":"QuantityChanged"}"#
            default:
                payload = #"{"note":"# + (index % 2 == 0 ? "null" : EventJSON.quoted(name)) + #","type":"NoteChanged"}"#
            }
            let event = Event(
                eventID: UUID(),
                feed: FeedID(replicaID: "origin-\(index % 4)", scope: index % 5 == 0 ? "shared" : "default"),
                seq: UInt64(index), timeMs: 1_700_000_000_000 + Int64(index), entityType: "item",
                entityID: "i\(index % 37)", payload: payload)
            let text = EventJSON.line(for: event, offset: index % 7 == 0 ? nil : Int64(index), arrivalTimeMs: 5)
            let fast = try #require(Self.fast(Array(text.utf8)), "fast path refused: \(text)")
            #expect(fast == event)
            #expect(try Self.general(Array(text.utf8)).get() == event)
        }
    }
}
