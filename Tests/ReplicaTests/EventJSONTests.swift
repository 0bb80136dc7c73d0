import Foundation
import Testing

@testable import Replica

/// The JSON line shape of an event in exports and the HTTP API.
@Suite("Event JSON")
struct EventJSONTests {
    private let event = Event(
        eventID: UUID(uuidString: "6F1C2A9E-3B4D-4E5F-8A7B-0C1D2E3F4A5B")!,
        feed: FeedID(replicaID: "tablet \"7\"", scope: "shared"), seq: 3, timeMs: 1_700_000_000_000,
        entityType: "item", entityID: "i1", payload: #"{"name":"Nuts","type":"Renamed"}"#)

    /// A valid line with one field replaced (or removed when `value` is nil).
    private func line(replacing field: String, with value: String?) throws -> String {
        var object = try #require(
            try JSONSerialization.jsonObject(with: Data(EventJSON.line(for: event, offset: 1, arrivalTimeMs: 2).utf8))
                as? [String: Any])
        if let value {
            object[field] = try JSONSerialization.jsonObject(with: Data(value.utf8), options: .fragmentsAllowed)
        } else {
            object[field] = nil
        }
        return String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self)
    }

    @Test("A line round-trips through event(fromLine:)")
    func roundTrip() throws {
        let text = EventJSON.line(for: event, offset: 17, arrivalTimeMs: 1_700_000_000_123)
        #expect(!text.contains("\n"))
        #expect(try EventJSON.event(fromLine: text) == event)
    }

    @Test("A line uses the thin-client field names and a lowercase event id")
    func fieldNames() throws {
        let text = EventJSON.line(for: event, offset: 17, arrivalTimeMs: 99)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        #expect(
            Set(object.keys) == [
                "replica_event_id", "replica_id", "scope", "replica_write_offset", "replica_time_ms", "entity_type",
                "entity_id", "payload", "server_offset", "server_time_ms",
            ])
        #expect(object["replica_event_id"] as? String == "6f1c2a9e-3b4d-4e5f-8a7b-0c1d2e3f4a5b")
        #expect((object["server_offset"] as? NSNumber)?.int64Value == 17)
        #expect((object["payload"] as? [String: Any])?["name"] as? String == "Nuts")
    }

    @Test("Absent server fields are written as null")
    func absentServerFieldsAreNull() {
        let text = EventJSON.line(for: event, offset: nil, arrivalTimeMs: nil)
        #expect(text.hasSuffix(#""server_offset":null,"server_time_ms":null}"#))
    }

    @Test("server_offset and server_time_ms are ignored when parsing")
    func serverFieldsAreIgnored() throws {
        let first = try EventJSON.event(fromLine: EventJSON.line(for: event, offset: 1, arrivalTimeMs: 10))
        let second = try EventJSON.event(fromLine: EventJSON.line(for: event, offset: 999, arrivalTimeMs: nil))
        #expect(first == second)
        #expect(first == event)
    }

    @Test("A missing scope parses as the default scope")
    func missingScopeIsDefault() throws {
        let parsed = try EventJSON.event(fromLine: line(replacing: "scope", with: nil))
        #expect(parsed.feed == FeedID(replicaID: event.feed.replicaID, scope: FeedID.defaultScope))
    }

    @Test("Unknown fields from newer writers are ignored")
    func unknownFieldsAreIgnored() throws {
        let text = try line(replacing: "signature", with: #""ed25519:abc""#)
        #expect(try EventJSON.event(fromLine: text) == event)
    }

    @Test("A payload is parsed into canonical text with numbers kept as numbers")
    func payloadIsCanonical() throws {
        let text = try line(replacing: "payload", with: #"{"type":"X","b":1,"a":0,"c":true,"d":1.5,"e":[null,"s"]}"#)
        let parsed = try EventJSON.event(fromLine: text)
        #expect(parsed.payload == #"{"a":0,"b":1,"c":true,"d":1.5,"e":[null,"s"],"type":"X"}"#)
    }

    @Test("A stored event's line carries its offset and arrival time")
    func storedEventLine() {
        let stored = StoredEvent(event: event, offset: 5, arrivalTimeMs: 6)
        #expect(EventJSON.line(for: stored) == EventJSON.line(for: event, offset: 5, arrivalTimeMs: 6))
    }

    @Test("A line that is not JSON is refused with a reason")
    func notJSON() {
        let error = #expect(throws: EventJSONError.self) { try EventJSON.event(fromLine: "{not json") }
        #expect(error?.reason.isEmpty == false)
    }

    @Test("A line without entity_id is refused, naming the field")
    func missingField() throws {
        let text = try line(replacing: "entity_id", with: nil)
        let error = #expect(throws: EventJSONError.self) { try EventJSON.event(fromLine: text) }
        #expect(error?.reason.contains("entity_id") == true)
    }

    @Test("A line with a malformed event id is refused, naming the field")
    func badUUID() throws {
        let text = try line(replacing: "replica_event_id", with: #""not-a-uuid""#)
        let error = #expect(throws: EventJSONError.self) { try EventJSON.event(fromLine: text) }
        #expect(error?.reason.contains("replica_event_id") == true)
        #expect(error?.reason.contains("not-a-uuid") == true)
    }

    @Test("A line whose payload is not an object is refused")
    func payloadNotObject() throws {
        let text = try line(replacing: "payload", with: #""Renamed""#)
        let error = #expect(throws: EventJSONError.self) { try EventJSON.event(fromLine: text) }
        #expect(error?.reason.contains("payload") == true)
    }

    @Test("A line with seq 0 is refused")
    func seqZero() throws {
        let text = try line(replacing: "replica_write_offset", with: "0")
        let error = #expect(throws: EventJSONError.self) { try EventJSON.event(fromLine: text) }
        #expect(error?.reason.contains("replica_write_offset") == true)
    }

    @Test("A line with a negative seq is refused")
    func negativeSeq() throws {
        let text = try line(replacing: "replica_write_offset", with: "-1")
        #expect(throws: EventJSONError.self) { try EventJSON.event(fromLine: text) }
    }

    @Test("quoted escapes quotes, backslashes and control characters")
    func quotedEscapes() {
        #expect(EventJSON.quoted(#"say "hi""#) == #""say \"hi\"""#)
        #expect(EventJSON.quoted(#"a\b"#) == #""a\\b""#)
        #expect(EventJSON.quoted("line\nbreak\ttab\r") == #""line\nbreak\ttab\r""#)
        #expect(EventJSON.quoted("\u{0}\u{1f}") == #""\u0000\u001f""#)
        #expect(EventJSON.quoted("caf\u{e9} \u{1F600}") == "\"caf\u{e9} \u{1F600}\"")
    }

    @Test("quoted output parses back to the original string")
    func quotedParsesBack() throws {
        let nasty = "\"\\/\u{0}\u{7}\u{8}\u{b}\u{c}\u{1b}\u{7f}\u{2028}é😀 end"
        let decoded = try JSONDecoder().decode(String.self, from: Data(EventJSON.quoted(nasty).utf8))
        #expect(decoded == nasty)
    }
}
