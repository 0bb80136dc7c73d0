import Foundation
import Testing

@testable import Replica

/// The canonical order `(time_ms, seq, event_id)`.
@Suite("Canonical order")
struct EventOrderKeyTests {
    private let low = UUID(uuidString: "00000000-0000-0000-0000-000000000001")!
    private let high = UUID(uuidString: "FFFFFFFF-0000-0000-0000-000000000000")!

    @Test("Time decides first")
    func timeFirst() {
        #expect(EventOrderKey(timeMs: 1, seq: 9, eventID: high) < EventOrderKey(timeMs: 2, seq: 1, eventID: low))
    }

    @Test("Seq decides between equal times")
    func seqSecond() {
        #expect(EventOrderKey(timeMs: 5, seq: 1, eventID: high) < EventOrderKey(timeMs: 5, seq: 2, eventID: low))
    }

    @Test("The event id decides between equal times and seqs")
    func eventIDLast() {
        let a = EventOrderKey(timeMs: 5, seq: 1, eventID: low)
        let b = EventOrderKey(timeMs: 5, seq: 1, eventID: high)
        #expect(a < b)
        #expect(!(b < a))
        #expect(!(a < a))
    }

    @Test("Event ids compare as their lowercase hex strings")
    func eventIDsCompareAsLowercaseHex() {
        var rng = SplitMix64(seed: 5)
        let ids = (0..<200).map { _ in
            let bytes = (0..<16).map { _ in UInt8.random(in: 0...255, using: &rng) }
            return UUID(bytes: bytes)!
        }
        let byKey = ids.sorted {
            EventOrderKey(timeMs: 0, seq: 1, eventID: $0) < EventOrderKey(timeMs: 0, seq: 1, eventID: $1)
        }
        let byHex = ids.sorted { $0.uuidString.lowercased() < $1.uuidString.lowercased() }
        #expect(byKey == byHex)
    }

    @Test("An event's order key is built from its time, seq and id")
    func eventOrderKey() {
        let event = Fixtures.itemEvent("r", seq: 3, time: 77, item: "i", .deleted, eventID: low)
        #expect(event.orderKey == EventOrderKey(timeMs: 77, seq: 3, eventID: low))
    }

    @Test("Negative times sort before positive ones")
    func negativeTimes() {
        #expect(EventOrderKey(timeMs: -1, seq: 1, eventID: high) < EventOrderKey(timeMs: 0, seq: 1, eventID: low))
    }
}
