import Dispatch
import Foundation
import SyncProtocol
import Synchronization
import TestSupport
import Testing

/// A relay's server offsets (its local offsets, `GET /events/all`'s
/// `server_offset`) across a kill -9 with writes in flight: they continue
/// with no gap, and an offset once given names the same event forever.
@Suite("peerd run --relay: server offsets")
struct ServerOffsetTests {
    let temp: TemporaryDirectory
    init() throws { temp = try TemporaryDirectory() }

    struct Page: Decodable {
        struct Event: Decodable {
            var replica_event_id: String
            var server_offset: Int64
            var server_time_ms: Int64
        }
        var events: [Event]
    }

    /// Writes items to a daemon one after another on a thread of its own
    /// until stopped.
    final class Writer: Sendable {
        private let stopping = Atomic<Bool>(false)
        private let done = DispatchSemaphore(value: 0)

        init(_ daemon: Daemon) {
            Thread { [self] in
                var number = 0
                while !stopping.load(ordering: .relaxed) {
                    number += 1
                    _ = try? daemon.createItem("Item \(number)")
                }
                done.signal()
            }.start()
        }

        /// Stops and returns once the last write has been answered.
        func stop() {
            stopping.store(true, ordering: .relaxed)
            done.wait()
        }
    }

    @Test("server offsets survive kill -9 of the relay mid-write: no gap, no reuse, arrival times in order")
    func offsetsSurviveKill() async throws {
        try temp.cluster("relay", ["a"])
        var relay = try Daemon.start(data: temp.url("relay"), extra: ["--relay"])
        let a = try Daemon.start(data: temp.url("a"), peers: [relay.address])
        let writer = Writer(a)
        try await Poll.eventually("the relay stores a's writes", timeout: .seconds(15)) {
            try Peek.eventCount(temp.url("relay")) >= 30
        }
        let port = relay.port
        #expect(try relay.kill())
        // What the killed relay had given out, as its file holds it.
        let given = try Peek.log(temp.url("relay")).events(after: 0, limit: 1_000_000)
        relay = try Daemon.start(data: temp.url("relay"), extra: ["--relay", "--listen", "127.0.0.1:\(port)"])
        try await Poll.eventually("the relay stores writes after its restart", timeout: .seconds(15)) {
            try Peek.eventCount(temp.url("relay")) >= given.count + 30
        }
        writer.stop()
        try Convergence.wait([temp.url("relay"), temp.url("a")])

        let reply = try relay.api!.request("GET", "/events/all")
        let events = try JSONDecoder().decode(Page.self, from: Data(reply.body)).events
        #expect(events.map(\.server_offset) == Array(1...Int64(events.count)), "no gap, in order")
        #expect(Set(events.map(\.replica_event_id)).count == events.count, "each event once")
        #expect(events.count == (try Peek.eventCount(temp.url("a"))))
        for stored in given {
            let now = events[Int(stored.offset) - 1]
            #expect(
                now.replica_event_id == stored.event.eventID.uuidString.lowercased(),
                "offset \(stored.offset) was reused")
            #expect(now.server_time_ms == stored.arrivalTimeMs)
        }
        let times = events.map(\.server_time_ms)
        #expect(zip(times, times.dropFirst()).allSatisfy { $0 <= $1 }, "server times follow server offsets")
        #expect(try a.stop() == 0, "\(a.stderr)")
        #expect(try relay.stop() == 0, "\(relay.stderr)")
    }
}
