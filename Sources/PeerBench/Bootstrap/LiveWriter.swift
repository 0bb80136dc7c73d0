import DaemonClient
import Foundation
import Replica

/// Item writes to a daemon's HTTP API at a steady rate, on a thread of its
/// own, until stopped: one in ten a new item (`POST /items`), the rest a
/// quantity change of an existing item (`POST /items/{id}/events`), as an
/// app on the source device keeps writing while a new device starts.
final class LiveWriter: Sendable {
    /// What the writer did.
    struct Tally: Sendable {
        var creates = 0
        var updates = 0
        var failures = 0
        var firstFailure: String?
        /// Each acknowledged write, from sending it until its `201`.
        var latencies: [Duration] = []
        /// From its first write until it stopped.
        var seconds = 0.0

        var writes: Int { creates + updates }
        var perSecond: Double { seconds > 0 ? Double(writes) / seconds : 0 }
    }

    private let stopFlag = StopFlag()
    private let work: BackgroundWork<Tally>

    /// Starts writing to `api` at `perSecond`, updating items of `itemIDs`;
    /// `label` tells this writer's new items from another's.
    init(api: ReplicaAPI, itemIDs: [String], perSecond: Int, label: String) {
        let flag = stopFlag
        work = BackgroundWork("live writer \(label)") {
            LiveWriter.write(api: api, itemIDs: itemIDs, perSecond: perSecond, label: label, stop: flag)
        }
    }

    /// Stops after the write in flight and returns what was written.
    func stop() throws -> Tally {
        stopFlag.raise()
        guard let tally = work.wait(seconds: 60) else {
            throw BenchmarkFailure(description: "the live writer did not stop within 60 s")
        }
        return tally
    }

    private static func write(api: ReplicaAPI, itemIDs: [String], perSecond: Int, label: String, stop: StopFlag)
        -> Tally
    {
        var tally = Tally()
        var random = SplitMix64(seed: 0x4C49_5645 ^ UInt64(label.utf8.count))
        let interval = Duration.nanoseconds(1_000_000_000 / max(1, perSecond))
        let start = ContinuousClock.now
        var next = start
        var serial = 0
        while !stop.isRaised {
            serial += 1
            let creating = serial % 10 == 1 || itemIDs.isEmpty
            let sent = ContinuousClock.now
            do {
                let reply: HTTPReply
                if creating {
                    reply = try api.send("POST", "/items", body: #"{"name":"live \#(label) \#(serial)","quantity":1}"#)
                } else {
                    let id = itemIDs[Int.random(in: 0..<itemIDs.count, using: &random)]
                    reply = try api.send(
                        "POST", "/items/\(id)/events", body: #"{"type":"QuantityChanged","quantity":\#(serial)}"#)
                }
                guard reply.status == 201 else { throw ProbeError.malformed("HTTP \(reply.status)") }
                tally.latencies.append(ContinuousClock.now - sent)
                if creating { tally.creates += 1 } else { tally.updates += 1 }
            } catch {
                tally.failures += 1
                if tally.firstFailure == nil { tally.firstFailure = "\(creating ? "POST /items" : "event"): \(error)" }
            }
            next += interval
            let now = ContinuousClock.now
            if next > now {
                Thread.sleep(forTimeInterval: (next - now).seconds)
            } else {
                next = now  // late: no burst to catch up
            }
        }
        tally.seconds = (ContinuousClock.now - start).seconds
        return tally
    }
}
