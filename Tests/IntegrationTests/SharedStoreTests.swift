import Dispatch
import Foundation
import Replica
import Synchronization
import TestSupport
import Testing

/// Relays on one PostgreSQL database act as one relay (docs/relay.md
/// "Relays on a shared PostgreSQL"): a real server started by the test
/// (`PostgresServer`), real `peerd run --relay --store` processes, the
/// seed's thin-client protocol over real sockets.
@Suite("peerd run --relay --store: relays on a shared PostgreSQL")
struct SharedStoreTests {
    let temp: TemporaryDirectory
    init() throws { temp = try TemporaryDirectory() }

    struct Page: Decodable {
        struct Event: Decodable, Equatable {
            var replica_event_id: String
            var replica_id: String
            var server_offset: Int64
            var server_time_ms: Int64
        }
        var events: [Event]
    }

    /// Every event a relay holds, as `GET /events/all` lists it.
    static func log(_ relay: Daemon) throws -> [Page.Event] {
        let reply = try relay.api!.request("GET", "/events/all")
        return try JSONDecoder().decode(Page.self, from: Data(reply.body)).events
    }

    static func relay(_ name: String, _ temp: TemporaryDirectory, _ postgres: PostgresServer, port: UInt16? = nil)
        throws -> Daemon
    {
        var extra = ["--relay", "--store", postgres.conninfo]
        if let port { extra += ["--listen", "127.0.0.1:\(port)"] }
        return try Daemon.start(data: temp.url(name), extra: extra)
    }

    /// Relays r1 and r2 on one store, replica a on r1 and b on r2; the relays are not given each other.
    func twoRelaysWithAReplicaEach() throws -> (PostgresServer, Daemon, Daemon, Daemon, Daemon) {
        let postgres = try PostgresServer.start()
        try temp.cluster("r1", ["r2", "a", "b"])
        let r1 = try Self.relay("r1", temp, postgres)
        let r2 = try Self.relay("r2", temp, postgres)
        let a = try Daemon.start(data: temp.url("a"), peers: [r1.address])
        let b = try Daemon.start(data: temp.url("b"), peers: [r2.address])
        return (postgres, r1, r2, a, b)
    }

    @Test("a phone pushes through one relay and pulls through the other; a retried push is recognised there")
    func phonePushesThroughOneAndPullsThroughTheOther() throws {
        let postgres = try PostgresServer.start()
        try temp.cluster("r1", ["r2"])
        let r1 = try Self.relay("r1", temp, postgres)
        let r2 = try Self.relay("r2", temp, postgres)
        let phone = SeedClient(replicaID: "phone-1", port: try #require(r1.api).port)
        let bolts = UUID()
        phone.store([(bolts, .created(name: "Bolts", quantity: 3))])
        phone.store([(bolts, .quantityChanged(quantity: 5)), (UUID(), .created(name: "Nuts", quantity: 1))])
        let retried = phone.pushBody(batch: 100)
        try phone.push(batch: 100)
        // The same batch again, at the other relay (a push whose answer was lost): answered, stored once.
        let other = SeedClient(replicaID: "phone-1", port: try #require(r2.api).port)
        let again = try other.request("POST", "/events", body: retried)
        #expect(again.status == 200, "\(again.body)")
        let first = try r1.api!.request("GET", "/events/all").text
        #expect(try Self.log(r1).count == 3)
        // A second phone pulls from r2 what the first pushed through r1, with r1's offsets.
        let reader = SeedClient(replicaID: "phone-2", port: try #require(r2.api).port)
        try reader.pull(batch: 2)
        #expect(reader.items[bolts]?.quantity == 5)
        #expect(reader.entries.compactMap(\.serverOffset) == [1, 2, 3])
        #expect(try Self.log(r2) == Self.log(r1), "one log, one set of offsets: \(first)")
    }

    @Test("a phone that moves to another relay mid-pull continues without a gap or a duplicate")
    func phoneMovesMidPull() throws {
        let postgres = try PostgresServer.start()
        try temp.cluster("r1", ["r2"])
        let r1 = try Self.relay("r1", temp, postgres)
        let r2 = try Self.relay("r2", temp, postgres)
        for number in 1...40 { _ = try (number % 2 == 0 ? r1 : r2).createItem("Item \(number)") }
        let phone = SeedClient(replicaID: "phone-1", port: try #require(r1.api).port)
        var offsets: [Int64] = []
        var cursor: Int64?
        for page in 0..<8 {
            // Pages of 5, alternating relays.
            phone.port = try #require((page % 2 == 0 ? r1 : r2).api).port
            let got = try phone.page(after: cursor, limit: 5)
            offsets += got.events.compactMap(\.serverOffset)
            cursor = got.next
        }
        #expect(offsets == Array(1...40))
        phone.port = try #require(r2.api).port
        #expect(try phone.page(after: cursor, limit: 5).events.isEmpty)
    }

    @Test("replicas of two relays that never meet converge through the store, signed feeds verified")
    func replicasOfTwoRelaysConverge() throws {
        let (postgres, r1, r2, a, b) = try twoRelaysWithAReplicaEach()
        _ = try a.createItem("From a")
        _ = try b.createItem("From b")
        let phone = SeedClient(replicaID: "phone-1", port: try #require(r1.api).port)
        phone.store([(UUID(), .created(name: "From the phone", quantity: 1))])
        try phone.push(batch: 10)
        try Convergence.wait(["r1", "r2", "a", "b"].map(temp.url))
        // b verified every feed it holds: a's (whose key only r1 met) and the phone's (signed by r1).
        let refused = try b.api!.request("GET", "/status").text
        #expect(refused.contains(#""refused_feeds":[]"#), "\(refused)")
        #expect(try Peek.eventCount(temp.url("b")) == 3)
        withExtendedLifetime((postgres, r2)) {}
    }

    @Test("kill -9 of a relay mid-push: every acknowledged event is held once, at one offset")
    func killedRelayLosesNoAcknowledgedEvent() async throws {
        let postgres = try PostgresServer.start()
        try temp.cluster("r1", ["r2"])
        let r1 = try Self.relay("r1", temp, postgres)
        let r2 = try Self.relay("r2", temp, postgres)
        let acknowledged = Mutex<[String]>([])
        let stopped = DispatchSemaphore(value: 0)
        Thread {
            let phone = SeedClient(replicaID: "phone-1", port: r1.api!.port)
            while true {
                phone.store([(UUID(), .created(name: "Pushed", quantity: 1))])
                guard let reply = try? phone.request("POST", "/events", body: phone.pushBody(batch: 1)),
                    reply.status == 200, (try? phone.markSynced(reply.body)) != nil
                else { break }
                let ids = phone.entries.filter { $0.serverOffset != nil }.map { $0.eventID.uuidString.lowercased() }
                acknowledged.withLock { $0 = ids }
            }
            stopped.signal()
        }.start()
        try await Poll.eventually("the phone's pushes are acknowledged", timeout: .seconds(20)) {
            acknowledged.withLock { $0.count } >= 20
        }
        #expect(try r1.kill())
        stopped.wait()
        let held = acknowledged.withLock { $0 }
        // r2 mirrors what r1 committed to PostgreSQL, on a pull.
        let phone = SeedClient(replicaID: "phone-2", port: try #require(r2.api).port)
        try phone.pull(batch: 1_000)
        let pulled = phone.entries.map { $0.eventID.uuidString.lowercased() }
        #expect(Set(held).isSubset(of: Set(pulled)), "acknowledged \(held.count), held \(pulled.count)")
        #expect(Set(pulled).count == pulled.count, "each event once")
        #expect(phone.entries.compactMap(\.serverOffset) == Array(1...Int64(pulled.count)), "no gap")
        // r1 comes back and finds its log and the store in step.
        let again = try Self.relay("r1", temp, postgres)
        try Convergence.wait([temp.url("r1"), temp.url("r2")])
        #expect(try Self.log(again) == Self.log(r2))
    }

    @Test("PostgreSQL stopped: relays refuse writes with 503, replicas keep writing, and nothing is lost")
    func postgresStoppedAndRestarted() async throws {
        let (postgres, r1, r2, a, b) = try twoRelaysWithAReplicaEach()
        _ = try a.createItem("Before")
        try Convergence.wait(["r1", "r2", "a", "b"].map(temp.url))

        try postgres.stop()
        let refused = try r1.api!.request("POST", "/items", body: #"{"name":"At the relay","quantity":1}"#)
        #expect(refused.status == 503 && refused.text.contains("store_unavailable"), "\(refused.text)")
        _ = try a.createItem("While the store is down")
        _ = try b.createItem("Also while it is down")
        #expect(try Peek.eventCount(temp.url("a")) == 2, "a replica writes offline as ever")
        let status = try r2.api!.request("GET", "/status").text
        #expect(status.contains(#""reachable":false"#), "\(status)")

        try postgres.restart()
        try Convergence.wait(["r1", "r2", "a", "b"].map(temp.url), timeout: .seconds(60))
        #expect(try Peek.eventCount(temp.url("r2")) == 3)
        #expect(try r1.api!.request("POST", "/items", body: #"{"name":"Back","quantity":1}"#).status == 201)
    }

    @Test("bad setups are refused with a clear error: --store without --relay, a relay whose log has events of its own")
    func badSetupsAreRefused() throws {
        let postgres = try PostgresServer.start()
        try temp.cluster("r1", ["r2"])
        let plain = try Executables.peerd(["run", "--no-mdns", "--store", postgres.conninfo], data: temp.url("r1"))
        #expect(plain.status != 0 && plain.stderr.contains("--relay"), "\(plain.stderr)")
        _ = try temp.peerdOK(["item", "create", "Local", "1"], "r2")
        let own = try Executables.peerd(
            ["run", "--no-mdns", "--relay", "--listen", "127.0.0.1:0", "--http", "off", "--store", postgres.conninfo],
            data: temp.url("r2"))
        #expect(own.status != 0 && own.stderr.contains("empty log"), "\(own.stderr)")
        // An unreachable store on first start: a clear error, not a hang.
        let nowhere = try Executables.peerd(
            [
                "run", "--no-mdns", "--relay", "--listen", "127.0.0.1:0", "--http", "off", "--store",
                "host=\(temp.url("none").path) port=5432 user=peersync dbname=site",
            ],
            data: temp.url("r1"))
        #expect(nowhere.status != 0 && nowhere.stderr.contains("shared store is unavailable"), "\(nowhere.stderr)")
    }
}
