import Foundation
import Replica

/// What the thin client pushes: one device creating 1,000 items and then
/// editing them (renames, quantities, notes), each batch numbered from 1
/// as the seed's client numbers a store call, in the seed's JSON.
struct ThinWorkload {
    struct Event {
        var item: Int
        var entityID: String
        var timeMs: Int64
        var payload: String
    }

    struct Batch {
        var events: [Event]
        /// The `POST /events` body.
        var body: String
    }

    let batches: [Batch]

    init(events count: Int, batch: Int, items: Int = 1_000) {
        var random = SplitMix64(seed: 0x5448_494E)
        let ids = (0..<items).map { _ in UUID().uuidString.lowercased() }
        let startMs = Int64(Date().timeIntervalSince1970 * 1000) - Int64(count)
        var events: [Event] = []
        events.reserveCapacity(count)
        for index in 0..<count {
            let item = index < items ? index : Int(random.next() % UInt64(items))
            let change: ItemEvent
            if index < items {
                change = .created(name: "item \(index)", quantity: 1)
            } else {
                switch index % 3 {
                case 0: change = .renamed(name: "item \(item) v\(index)")
                case 1: change = .quantityChanged(quantity: Int64(index % 997))
                default: change = .noteChanged(note: "aisle \(index % 40)")
                }
            }
            events.append(
                Event(item: item, entityID: ids[item], timeMs: startMs + Int64(index), payload: change.payload))
        }
        var batches: [Batch] = []
        var start = 0
        while start < events.count {
            let slice = Array(events[start..<min(start + batch, events.count)])
            var writeOffset = 0
            let body = slice.map { event -> String in
                writeOffset += 1
                let id = UUID().uuidString.lowercased()
                return """
                    {"replica_event_id":"\(id)","entity_id":"\(event.entityID)","payload":\(event.payload),\
                    "replica_id":"bench-phone","replica_time_ms":\(event.timeMs),"replica_write_offset":\(writeOffset),\
                    "server_offset":null,"server_time_ms":null}
                    """
            }
            batches.append(Batch(events: slice, body: "[" + body.joined(separator: ",") + "]"))
            start += batch
        }
        self.batches = batches
    }
}
