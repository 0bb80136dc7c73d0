import Foundation

/// The live events of `peerd-bench relay-fanout` as its clients receive
/// them: each one's name carries when the writer sent it
/// (`fanout-write-<uptime ns>`), so every arrival is one latency sample
/// (kept as a histogram of 100 µs steps up to 60 s), and each event's last
/// arrival says when every client held it.
struct FanoutDeliveries {
    /// The prefix of a written item's name, before the writer's uptime in nanoseconds.
    static let namePrefix = "fanout-write-"
    static let bucketNanos: UInt64 = 100_000
    static let buckets = 600_000

    private(set) var histogram = [Int](repeating: 0, count: FanoutDeliveries.buckets)
    private(set) var count = 0
    private(set) var maxNanos: UInt64 = 0
    /// Per event, by its send time: how many clients received it, and the last arrival.
    private(set) var events: [UInt64: (received: Int, lastNanos: UInt64)] = [:]
    /// Events whose payload carried no send time (the history before the run).
    private(set) var unmarked = 0

    /// Notes one arrival at `atNanos` of what was sent at `sentNanos`
    /// (uptime); nil: an event with no send time in it.
    mutating func note(sentNanos: UInt64?, atNanos: UInt64) {
        guard let sent = sentNanos else {
            unmarked += 1
            return
        }
        let latency = atNanos > sent ? atNanos - sent : 0
        histogram[min(Int(latency / Self.bucketNanos), Self.buckets - 1)] += 1
        count += 1
        maxNanos = max(maxNanos, latency)
        let held = events[sent] ?? (0, 0)
        events[sent] = (held.received + 1, max(held.lastNanos, atNanos))
    }

    /// The latency at `fraction` of the arrivals (nearest rank), in seconds: the upper edge of its bucket.
    func percentile(_ fraction: Double) -> Double {
        guard count > 0 else { return 0 }
        let rank = max(1, Int((fraction * Double(count)).rounded(.up)))
        var seen = 0
        for (bucket, number) in histogram.enumerated() {
            seen += number
            if seen >= rank {
                return min(Double(UInt64(bucket + 1) * Self.bucketNanos), Double(maxNanos)) / 1e9
            }
        }
        return Double(maxNanos) / 1e9
    }

    var maxSeconds: Double { Double(maxNanos) / 1e9 }

    /// For each event every one of `clients` received: from its send until the last client held it.
    func allHeld(by clients: Int) -> [Duration] {
        events.compactMap { sent, held in
            held.received >= clients ? .nanoseconds(Int64(held.lastNanos - min(sent, held.lastNanos))) : nil
        }
    }

    /// Events that some client never received (or not by the end of the run).
    func incomplete(clients: Int) -> Int { events.values.filter { $0.received < clients }.count }

    /// The send time in a payload that holds `fanout-write-<digits>`.
    static func sendTime(in payload: String) -> UInt64? {
        let bytes = Array(payload.utf8)
        let prefix = Array(namePrefix.utf8)
        guard bytes.count >= prefix.count else { return nil }
        for start in 0...(bytes.count - prefix.count) where bytes[start..<(start + prefix.count)].elementsEqual(prefix)
        {
            var value: UInt64 = 0
            var index = start + prefix.count
            while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) {
                value = value &* 10 &+ UInt64(bytes[index] - UInt8(ascii: "0"))
                index += 1
            }
            return index > start + prefix.count ? value : nil
        }
        return nil
    }
}
