import Testing

@testable import Replica

/// The byte-level check that lets ingest keep a payload without re-encoding it.
@Suite("Canonical form")
struct CanonicalFormTests {
    @Test("Canonical text of values without fractions or escaped keys is recognised")
    func recognisesCanonicalText() throws {
        var random = SplitMix64(seed: 7)
        for _ in 0..<2_000 {
            let text = JSONValue.object(Self.randomMembers(depth: 0, using: &random)).canonicalText
            #expect(CanonicalForm.isCanonicalObject(text), "\(text)")
        }
    }

    @Test("Whatever it accepts re-encodes to the same bytes")
    func acceptsOnlyCanonicalText() throws {
        var random = SplitMix64(seed: 11)
        var accepted = 0
        for _ in 0..<5_000 {
            let canonical = JSONValue.object(Self.randomMembers(depth: 0, using: &random)).canonicalText
            let text = Self.mutated(canonical, using: &random)
            guard CanonicalForm.isCanonicalObject(text) else { continue }
            accepted += 1
            let value = try JSONValue.parse(text)
            #expect(value.canonicalText == text, "\(text)")
        }
        #expect(accepted > 0)
    }

    @Test(
        "Text that is valid JSON but not canonical is refused",
        arguments: [
            #"{"b":1,"a":2}"#, #"{"a":1,"a":1}"#, #"{ "a":1}"#, #"{"a":1} "#, #"{"a":01}"#, #"{"a":-0}"#,
            #"{"a":1.5}"#, #"{"a":1e3}"#, #"{"a":"\/"}"#, #"{"a":"\u0041"}"#, #"{"a":"\u000A"}"#,
            #"{"a":"\u001F"}"#, #"{"a":"\b"}"#, #"{"\n":1}"#, #"{"a":1234567890123456789}"#, #"[1]"#, #""a""#,
            #"{"a":[1, 2]}"#, #"{"a":tru}"#, #"{"a":1,}"#, #"{"a":"x"#, "{\"a\":\"\u{01}\"}",
        ])
    func refusesNonCanonical(_ text: String) {
        #expect(!CanonicalForm.isCanonicalObject(text))
    }

    @Test("Escapes that the canonical writer uses are accepted in values")
    func acceptsCanonicalEscapes() {
        #expect(CanonicalForm.isCanonicalObject(#"{"a":"q\"b\\c\nd\re\tf\u0001\u001f","b":null}"#))
        #expect(CanonicalForm.isCanonicalObject(#"{"type":"Created","name":"Bolts ✓","quantity":-5}"#) == false)
        #expect(CanonicalForm.isCanonicalObject(#"{"name":"Bolts ✓","quantity":-5,"type":"Created"}"#))
    }

    @Test("Nesting as deep as the parser refuses is refused")
    func refusesDeepNesting() {
        let deep = "{\"a\":" + String(repeating: "[", count: 300) + String(repeating: "]", count: 300) + "}"
        #expect(!CanonicalForm.isCanonicalObject(deep))
    }

    private static let alphabet: [String] = ["a", "b", "B", "é", "\"", "\\", "\n", "\u{01}", "\u{1F}", "/", " ", "✓"]

    private static func randomString(using random: inout SplitMix64) -> String {
        (0..<Int.random(in: 0...4, using: &random)).map { _ in alphabet.randomElement(using: &random)! }.joined()
    }

    private static func randomMembers(depth: Int, using random: inout SplitMix64) -> [String: JSONValue] {
        var members: [String: JSONValue] = [:]
        for _ in 0..<Int.random(in: 0...4, using: &random) {
            // Plain keys: escaped keys are left to the full path.
            let key = String(
                (0..<Int.random(in: 1...3, using: &random)).map { _ in "abcAé_".randomElement(using: &random)! })
            members[key] = randomValue(depth: depth + 1, using: &random)
        }
        return members
    }

    private static func randomValue(depth: Int, using random: inout SplitMix64) -> JSONValue {
        switch Int.random(in: 0..<(depth < 3 ? 8 : 6), using: &random) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &random))
        case 2: return .int(Int64.random(in: -1_000_000...1_000_000, using: &random))
        case 3: return .int(Int64.random(in: -999_999_999_999_999_999...999_999_999_999_999_999, using: &random))
        case 4, 5: return .string(randomString(using: &random))
        case 6:
            return .array(
                (0..<Int.random(in: 0...3, using: &random)).map { _ in randomValue(depth: depth + 1, using: &random) })
        default: return .object(randomMembers(depth: depth, using: &random))
        }
    }

    /// The text with one random edit: a byte replaced, inserted or removed.
    private static func mutated(_ text: String, using random: inout SplitMix64) -> String {
        var scalars = Array(text.unicodeScalars)
        let pieces: [Unicode.Scalar] = [
            " ", "0", "-", ".", "e", "\\", "\"", "u", "a", "{", "}", "[", "]", ",", ":", "1",
        ]
        let position = Int.random(in: 0..<scalars.count, using: &random)
        switch Int.random(in: 0..<3, using: &random) {
        case 0: scalars[position] = pieces.randomElement(using: &random)!
        case 1: scalars.insert(pieces.randomElement(using: &random)!, at: position)
        default: scalars.remove(at: position)
        }
        var result = ""
        result.unicodeScalars.append(contentsOf: scalars)
        return result
    }
}
