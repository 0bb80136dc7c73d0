import Foundation
import TestSupport
import Testing

@testable import Replica

/// The differential test of declared domains (docs/domains.md "Item,
/// declared"): random histories, and the seed's scenarios, folded by the
/// Swift `Item` and by its declared twin give the same state on every
/// history, byte for byte, and so the same state hash.
@Suite("Item and its declared twin")
struct DeclaredItemTwinTests {
    let directory: TemporaryDirectory
    init() throws { directory = try TemporaryDirectory() }

    static let seeds: [UInt64] = Array(1...24) + [0xC0FF_EE00, 20_240_601, 0xDEAD_BEEF_0BAD_F00D]

    static func twin() throws -> Domain {
        Domain(declared: FoldPlan(try DomainDeclaration(json: try JSONValue.parse(DomainDeclaration.itemTwin()))))
    }

    /// A log that folds `item` with the Swift domain, or with the declared twin standing in for it.
    func log(_ name: String, declared: Bool) throws -> EventLog {
        var options = EventLog.Options()
        options.durability = .normal
        if declared { options.domains = [try Self.twin()] }
        return try EventLog.create(at: directory.path("\(name).db"), replicaID: name, options: options)
    }

    /// Payloads the Item domain must skip as poison, or must take as it does (extra fields, null notes).
    static let oddPayloads = [
        #"{"type":"Created","name":"Odd","quantity":8.5}"#, #"{"type":"Created","name":null,"quantity":1}"#,
        #"{"type":"Created","quantity":1}"#, #"{"type":"QuantityChanged","quantity":"7"}"#,
        #"{"type":"NoteChanged"}"#, #"{"type":"NoteChanged","note":5}"#, #"{"type":"NoteChanged","note":null}"#,
        #"{"type":"Renamed","name":"Extra","colour":"red"}"#, #"{"type":"Exploded"}"#, #"{"type":7}"#,
        #"{"name":"No type"}"#, #"{"type":"Deleted","why":"typo"}"#, #"{"type":"Renamed","name":"Esc\"aped"}"#,
        #"{"type":"QuantityChanged","quantity":99999999999999999999}"#,
    ]

    /// A feed of odd payloads on the history's items, at times among theirs.
    func oddFeed(using rng: inout SplitMix64) -> [Event] {
        (1...40).map { seq in
            Fixtures.rawEvent(
                "odd", seq: UInt64(seq), time: RandomHistory.baseTimeMs + Int64.random(in: 0...3_000, using: &rng),
                entity: RandomHistory.itemIDs.randomElement(using: &rng)!,
                payload: Self.oddPayloads.randomElement(using: &rng)!)
        }
    }

    @Test("random histories, with poison, undos and clock skew, fold to the same states", arguments: seeds)
    func randomHistoriesFoldAlike(seed: UInt64) throws {
        var rng = SplitMix64(seed: seed)
        let history = try RandomHistory.generate(using: &rng, in: directory, steps: 200)
        let feeds = history.feeds + [oddFeed(using: &rng)]
        let swift = try log("swift", declared: false)
        let declared = try log("declared", declared: true)
        // Each in its own random order and batching: the fold must not depend on either.
        for receiver in [swift, declared] {
            for batch in RandomDelivery.batches(
                of: feeds, using: &rng, repeatOneIn: 10, size: { Int.random(in: 1...30, using: &$0) })
            {
                try receiver.ingest(batch)
            }
        }
        #expect(try swift.cursor() == (try declared.cursor()), "seed \(seed)")
        #expect(try RawSQL.entityStates(swift.path) == (try RawSQL.entityStates(declared.path)), "seed \(seed)")
        #expect(try swift.poisonEventCount() == (try declared.poisonEventCount()), "seed \(seed)")
        #expect(try swift.poisonEventCount() > 0, "seed \(seed): the odd feed made poison")
        #expect(try swift.stateHash() == (try declared.stateHash()), "seed \(seed)")
    }

    @Test("the seed's scenarios: deletion wins, events before Created, an undone delete, a cleared note")
    func theSeedsScenariosFoldAlike() throws {
        let base = RandomHistory.baseTimeMs
        func event(_ seq: UInt64, _ time: Int64, _ entity: String, _ payload: String) -> Event {
            Fixtures.rawEvent("seed", seq: seq, time: base + time, entity: entity, payload: payload)
        }
        let deleteOfI3 = event(7, 31, "i3", #"{"type":"Deleted"}"#)
        let history = [
            event(1, 10, "i1", #"{"name":"Bolts","quantity":5,"type":"Created"}"#),
            event(2, 20, "i1", #"{"name":"Screws","type":"Renamed"}"#),
            event(3, 15, "i1", #"{"type":"Deleted"}"#),  // sorts before the rename: the rename is ignored
            event(4, 5, "i2", #"{"quantity":3,"type":"QuantityChanged"}"#),  // before Created (clock skew)
            event(5, 6, "i2", #"{"name":"Nuts","quantity":1,"type":"Created"}"#),
            event(6, 30, "i3", #"{"name":"Washers","quantity":2,"type":"Created"}"#),
            deleteOfI3,
            event(8, 32, "i3", Fixtures.undonePayload(deleteOfI3.eventID)),  // the delete undone
            event(9, 40, "i4", #"{"name":"Pins","quantity":1,"type":"Created"}"#),
            event(10, 41, "i4", #"{"note":"aisle 4","type":"NoteChanged"}"#),
            event(11, 42, "i4", #"{"note":null,"type":"NoteChanged"}"#),
        ]
        let swift = try log("swift", declared: false)
        let declared = try log("declared", declared: true)
        try swift.ingest(history)
        try declared.ingest(history.reversed())
        #expect(try RawSQL.entityStates(swift.path) == (try RawSQL.entityStates(declared.path)))
        #expect(try swift.stateHash() == (try declared.stateHash()))
        let items = try swift.projections(Item.self)
        #expect(items.map(\.deleted) == [true, false, false, false], "\(items)")
        #expect(items[1].quantity == 1 && items[1].name == "Nuts")
        #expect(items[3].note == nil)
    }

    @Test("a local append is checked against the declaration, naming the field; nothing is stored")
    func localAppendsAreChecked() throws {
        let declared = try log("declared", declared: true)
        func refusal(_ payload: String) -> String {
            do {
                try declared.append(NewEvent(entityType: "item", entityID: "i1", payload: payload))
                return "stored"
            } catch {
                return "\(error)"
            }
        }
        #expect(
            refusal(#"{"type":"Created","name":"Bolts"}"#).contains(#"field "quantity" of item Created is missing"#))
        #expect(
            refusal(#"{"type":"Created","name":"Bolts","quantity":"5"}"#).contains(
                #"field "quantity" of item Created must be integer, not a string"#))
        #expect(refusal(#"{"type":"Exploded"}"#).contains(#"item has no event "Exploded""#))
        #expect(
            refusal(#"{"type":"Renamed","name":"x","colour":"red"}"#).contains(
                #"field "colour" is not declared for item Renamed"#))
        #expect(try declared.eventCount() == 0)
        #expect(refusal(#"{"type":"Created","name":"Bolts","quantity":5}"#) == "stored")
    }
}
