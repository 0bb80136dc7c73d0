import Foundation
import Testing

@testable import Replica

/// The Item domain's direct decoder and encoder must agree with `Codable`
/// byte for byte: a replica that took one path and a replica that took the
/// other would otherwise report different state hashes.
@Suite("Item fast paths agree with Codable")
struct FastFoldPathTests {
    static let alphabet: [String] = [
        "a", "Z", "0", " ", "\"", "\\", "/", "\n", "\t", "\u{01}", "\u{1F}", "\u{7F}", "é", "e\u{301}", "ß", "日",
        "🦀", "\u{2028}", "{", "}", ",", ":",
    ]

    static func randomText(_ rng: inout SplitMix64) -> String {
        let length = Int.random(in: 0...12, using: &rng)
        return (0..<length).map { _ in alphabet.randomElement(using: &rng)! }.joined()
    }

    static func randomInteger(_ rng: inout SplitMix64) -> Int64 {
        let special: [Int64] = [
            0, -1, 1, 9, 10, Int64.max, Int64.min, 999_999_999_999_999_999, -1_000_000_000_000_000_000,
        ]
        return Bool.random(using: &rng)
            ? special.randomElement(using: &rng)! : Int64.random(in: -5000...5000, using: &rng)
    }

    static func randomItem(_ rng: inout SplitMix64) -> Item {
        var item = Item(id: randomText(&rng))
        item.name = randomText(&rng)
        item.quantity = randomInteger(&rng)
        item.note = Bool.random(using: &rng) ? nil : randomText(&rng)
        item.deleted = Bool.random(using: &rng)
        item.lastModifiedMs = randomInteger(&rng)
        return item
    }

    @Test("Item.canonicalJSON equals the Codable encoding for random items")
    func encoderAgrees() {
        var rng = SplitMix64(seed: 0x17E4)
        for _ in 0..<2_000 {
            let item = Self.randomItem(&rng)
            #expect(item.canonicalJSON == CanonicalJSON.text(of: item))
        }
    }

    @Test("A stored payload decodes to what Codable decodes, or is left to Codable")
    func decoderAgreesOnRandomEvents() throws {
        var rng = SplitMix64(seed: 0xDEC0DE)
        var decodedFast = 0
        for _ in 0..<2_000 {
            let event: ItemEvent
            switch Int.random(in: 0..<5, using: &rng) {
            case 0: event = .created(name: Self.randomText(&rng), quantity: Self.randomInteger(&rng))
            case 1: event = .renamed(name: Self.randomText(&rng))
            case 2: event = .quantityChanged(quantity: Self.randomInteger(&rng))
            case 3: event = .noteChanged(note: Bool.random(using: &rng) ? nil : Self.randomText(&rng))
            default: event = .deleted
            }
            let payload = event.payload
            let fast = Item.decodeStoredEvent(payload)
            if fast != nil { decodedFast += 1 }
            #expect(fast == nil || fast == event, "\(payload)")
        }
        // Names without escapes are the common case and must take the fast path.
        #expect(decodedFast > 500)
    }

    @Test(
        "Payloads the fast path must leave to Codable, or decode exactly alike",
        arguments: [
            #"{"quantity":007,"type":"QuantityChanged"}"#, #"{"quantity":7.0,"type":"QuantityChanged"}"#,
            #"{"quantity":7e0,"type":"QuantityChanged"}"#,
            #"{"quantity":1234567890123456789,"type":"QuantityChanged"}"#,
            #"{"quantity":-0,"type":"QuantityChanged"}"#, #"{"type":"QuantityChanged","quantity":7}"#,
            #"{"quantity":7,"quantity":8,"type":"QuantityChanged"}"#, #"{ "quantity":7,"type":"QuantityChanged"}"#,
            #"{"extra":1,"quantity":7,"type":"QuantityChanged"}"#, #"{"type":"NoteChanged"}"#,
            #"{"note":null,"type":"NoteChanged"}"#, #"{"name":"a","note":"b","quantity":1,"type":"Created"}"#,
            #"{"name":"a\"b","type":"Renamed"}"#, #"{"name":"a\u0041","type":"Renamed"}"#, #"{"type":"Exploded"}"#,
            #"{"type":"Deleted"}"#, #"{"type":"Deleted"}x"#, #"{}"#, #"{"name":{"a":1},"type":"Renamed"}"#,
            #"{"quantity":"7","type":"QuantityChanged"}"#, #"{"quantity":true,"type":"QuantityChanged"}"#,
            "{\"name\":\"tab\tin\",\"type\":\"Renamed\"}", #"{"quantity":-,"type":"QuantityChanged"}"#,
            #"{"quantity":-12,"type":"QuantityChanged"}"#, #"{"name":"","quantity":0,"type":"Created"}"#,
            "", "[]", #"{"type":"Deleted""#,
        ])
    func decoderAgreesOnEdgeCases(payload: String) {
        let generic = try? CanonicalJSON.decode(ItemEvent.self, from: payload)
        let fast = Item.decodeStoredEvent(payload)
        if generic == nil { #expect(fast == nil, "\(payload) would be poison, not \(String(describing: fast))") }
        if let fast { #expect(fast == generic, "\(payload)") }
    }

    @Test("A stored state decodes to what Codable decodes, or is left to Codable")
    func stateDecoderAgreesOnRandomItems() throws {
        var rng = SplitMix64(seed: 0x57A7E)
        var decodedFast = 0
        for _ in 0..<2_000 {
            let item = Self.randomItem(&rng)
            let fast = Item(storedState: item.canonicalJSON)
            if fast != nil { decodedFast += 1 }
            #expect(fast == nil || fast == item, "\(item.canonicalJSON)")
        }
        // Texts without escapes are the common case and must take the fast path.
        #expect(decodedFast > 20)
        var plain = Item(id: "i1")
        plain.name = "shelf, oak"
        plain.quantity = -3
        plain.note = "日本 🦀"
        plain.lastModifiedMs = 1_796_000_000_000
        #expect(Item(storedState: plain.canonicalJSON) == plain)
    }

    @Test(
        "States the fast path must leave to Codable, or decode exactly alike",
        arguments: [
            #"{"deleted":false,"id":"i1","last_modified_ms":5,"name":"a","note":null,"quantity":3}"#,
            #"{"deleted":true,"id":"i1","last_modified_ms":-5,"name":"","note":"n","quantity":-3}"#,
            #"{"id":"i1","deleted":false,"last_modified_ms":5,"name":"a","note":null,"quantity":3}"#,
            #"{"deleted":false,"id":"i1","last_modified_ms":5,"name":"a","quantity":3}"#,
            #"{"deleted":false,"extra":1,"id":"i1","last_modified_ms":5,"name":"a","note":null,"quantity":3}"#,
            #"{"deleted":0,"id":"i1","last_modified_ms":5,"name":"a","note":null,"quantity":3}"#,
            #"{"deleted":false,"id":7,"last_modified_ms":5,"name":"a","note":null,"quantity":3}"#,
            #"{"deleted":false,"id":"i1","last_modified_ms":5,"name":"a","note":1,"quantity":3}"#,
            #"{"deleted":false,"id":"i1","last_modified_ms":5,"name":"a","note":null,"quantity":3.0}"#,
            #"{"deleted":false,"id":"i1","last_modified_ms":05,"name":"a","note":null,"quantity":3}"#,
            #"{"deleted":false,"id":"i1","last_modified_ms":5,"name":"a\"b","note":null,"quantity":3}"#,
            #"{"deleted":false,"id":"i1","last_modified_ms":5,"name":"a","note":null,"quantity":99999999999999999999}"#,
            #"{"deleted":false,"id":"i1","last_modified_ms":5,"name":"a","note":null,"quantity":3} "#,
            #"{"deleted":false,"id":"i1","last_modified_ms":5,"name":"a","name":"b","note":null,"quantity":3}"#,
            "", "{}", "[]", "null",
        ])
    func stateDecoderAgreesOnEdgeCases(json: String) {
        let generic = try? CanonicalJSON.decode(Item.self, from: json)
        let fast = Item(storedState: json)
        if generic == nil { #expect(fast == nil, "\(json) does not decode, not as \(String(describing: fast))") }
        if let fast { #expect(fast == generic, "\(json)") }
    }

    /// A domain without fast paths, as an app writes one.
    struct Counter: EventSourcedEntity {
        enum Event: Codable, Sendable, Equatable { case add(Int64) }
        static let entityType = "counter"
        var id: String
        var total: Int64 = 0
        init(id: String) { self.id = id }
        mutating func apply(_ event: Event, info: ModificationInfo) {
            if case .add(let n) = event { total += n }
        }
    }

    static func event(_ entityType: String, _ payload: String, seq: UInt64) -> Replica.Event {
        Replica.Event(
            eventID: UUID(), feed: FeedID(replicaID: "r1"), seq: seq, timeMs: Int64(seq),
            entityType: entityType, entityID: "e1", payload: payload)
    }

    @Test("Domain takes Item's fast paths, and Codable alone for a domain without them")
    func domainPicksItsPaths() {
        let items = Domain(Item.self)
        #expect(items.decodesStoredEvent(ItemEvent.quantityChanged(quantity: 8).payload))
        var poison: [UUID] = []
        let item = items.apply(
            [Self.event("item", ItemEvent.created(name: "a", quantity: 1).payload, seq: 1)],
            to: items.state(entityID: "e1", from: nil), poison: &poison)
        #expect(items.encode(item) == (item as! Item).canonicalJSON)

        let counters = Domain(Counter.self)
        let add = CanonicalJSON.text(of: Counter.Event.add(3))
        #expect(!counters.decodesStoredEvent(add))
        #expect(counters.decodes(add))
        let garbage = Self.event("counter", #"{"type":"Deleted"}"#, seq: 2)
        let counter = counters.apply(
            [Self.event("counter", add, seq: 1), garbage, Self.event("counter", add, seq: 3)],
            to: counters.state(entityID: "e1", from: nil), poison: &poison)
        #expect(poison == [garbage.eventID])
        var expected = Counter(id: "e1")
        expected.total = 6
        #expect(counter as? Counter == expected)
        #expect(counters.encode(counter) == CanonicalJSON.text(of: expected))
        #expect(counters.state(entityID: "e1", from: counters.encode(counter)) as? Counter == expected)
    }
}
