import Testing

@testable import Replica

/// The strict JSON parser and canonical writer used for payloads.
@Suite("JSON parser")
struct JSONParserTests {
    @Test("Objects, arrays, numbers, literals and escapes parse to the values they spell")
    func parsesEveryKind() throws {
        let value = try JSONValue.parse(
            #" {"a": [1, -2, 3.5, 1e3, true, false, null], "s": "q\"b\\s\/n\n\u00e9\ud83d\ude00", "o": {}} "#)
        #expect(
            value
                == .object([
                    "a": .array([.int(1), .int(-2), .double(3.5), .double(1000), .bool(true), .bool(false), .null]),
                    "s": .string("q\"b\\s/n\n\u{e9}\u{1F600}"),
                    "o": .object([:]),
                ]))
    }

    @Test(
        "Malformed text is refused",
        arguments: [
            "", "{", "{\"a\":}", "{\"a\" 1}", "[1,]", "{\"a\":1,}", "01", "1.", "-", "tru", "\"abc",
            "\"a\u{01}b\"", "\"\\x\"", "\"\\ud800\"", "{} {}", "{\"a\":1}x", "NaN", "1e400",
        ])
    func refusesMalformed(_ text: String) {
        #expect(throws: JSONParser.Failure.self) { try JSONValue.parse(text) }
    }

    @Test("Nesting deeper than the limit is refused instead of exhausting the stack")
    func refusesDeepNesting() {
        let deep = String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)
        #expect(throws: JSONParser.Failure.self) { try JSONValue.parse(deep) }
    }

    @Test("Canonical text is compact with keys in byte order, whatever the input's spacing and order")
    func canonicalText() throws {
        let a = try JSONValue.parse(#"{ "quantity" : 8, "type":"QuantityChanged", "Z": [ 1 , {"b":1,"a":2} ] }"#)
        let b = try JSONValue.parse(#"{"Z":[1,{"a":2,"b":1}],"type":"QuantityChanged","quantity":8}"#)
        #expect(a.canonicalText == #"{"Z":[1,{"a":2,"b":1}],"quantity":8,"type":"QuantityChanged"}"#)
        #expect(a.canonicalText == b.canonicalText)
        #expect(try JSONValue.parse(a.canonicalText) == a)
    }

    @Test("Integers stay exact up to Int64, larger ones become doubles")
    func integerRange() throws {
        #expect(try JSONValue.parse("9223372036854775807") == .int(Int64.max))
        #expect(try JSONValue.parse("9223372036854775808") == .double(9_223_372_036_854_775_808))
    }
}
