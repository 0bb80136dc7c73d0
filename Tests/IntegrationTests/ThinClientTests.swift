import Foundation
import Replica
import TestSupport
import Testing

/// The seed's phone client against real `peerd run` daemons: a client
/// written from the protocol (`SeedClient`, plain sockets) pushes and
/// pulls over `/events` (docs/relay.md).
@Suite("peerd run: the thin-client protocol")
struct ThinClientTests {
    let temp: TemporaryDirectory
    init() throws { temp = try TemporaryDirectory() }

    @discardableResult
    func ok(_ arguments: [String], _ dir: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        try temp.peerdOK(arguments, dir, sourceLocation: sourceLocation)
    }

    /// What `peerd items --json --include-deleted` shows, in the seed's terms.
    func meshItems(_ dir: String) throws -> [UUID: SeedClient.SeedItem] {
        let json = try ok(["items", "--json", "--include-deleted"], dir)
        var items: [UUID: SeedClient.SeedItem] = [:]
        for item in try JSONDecoder().decode([Item].self, from: Data(json.utf8)) {
            guard let id = UUID(uuidString: item.id) else { continue }
            items[id] = SeedClient.SeedItem(
                name: item.name, quantity: item.quantity, note: item.note, deleted: item.deleted)
        }
        return items
    }

    func port(_ daemon: Daemon) throws -> UInt16 { try #require(daemon.api).port }

    @Test("a thin client pushes, retries a lost answer, pulls across pages and ends with the mesh's items")
    func thinClientSyncsWithTheMesh() throws {
        try temp.cluster("relay", ["a", "b"])
        let relay = try Daemon.start(data: temp.url("relay"), extra: ["--relay"])
        let a = try Daemon.start(data: temp.url("a"), peers: [relay.address])
        let b = try Daemon.start(data: temp.url("b"), peers: [relay.address])
        defer { for daemon in [relay, a, b] { _ = try? daemon.stop() } }
        let phone = SeedClient(replicaID: "phone-1", port: try port(relay))

        let (bolts, nuts) = (UUID(), UUID())
        phone.store([(bolts, .created(name: "Bolts", quantity: 5)), (nuts, .created(name: "Nuts", quantity: 3))])
        phone.store([(bolts, .quantityChanged(quantity: 8)), (nuts, .noteChanged(note: "aisle 4"))])
        // The first push's answer is lost: the relay stored it, the phone never saw the offsets.
        let lostBody = phone.pushBody(batch: 3)
        try phone.sendAndHangUp("POST", "/events", body: lostBody) { try Peek.eventCount(temp.url("relay")) == 3 }
        #expect(phone.unsynced.count == 4)
        try phone.push(batch: 3)
        #expect(phone.unsynced.isEmpty)
        #expect(try Peek.eventCount(temp.url("relay")) == 4)
        #expect(phone.entries.compactMap(\.serverOffset) == [1, 2, 3, 4])
        // A replay of the lost batch answers the same offsets again.
        let replay = try phone.request("POST", "/events", body: lostBody)
        #expect(replay.status == 200)
        guard case .array(let replayed) = try JSONValue.parse(replay.body) else {
            Issue.record("not an array: \(replay.body)")
            return
        }
        #expect(replayed.map { $0["server_offset"] } == [.int(1), .int(2), .int(3)])
        #expect(try Peek.eventCount(temp.url("relay")) == 4)

        // Mesh replicas edit too, through their own APIs.
        let washers = try ok(["item", "create", "Washers", "12"], "a")
        try ok(["item", "rename", bolts.uuidString.lowercased(), "Hex bolts"], "b")
        try Convergence.wait([temp.url("relay"), temp.url("a"), temp.url("b")])

        // Pages of 2: several pages, the loop ends on the empty one.
        let pages = try phone.pull(batch: 2)
        #expect(pages == 3)
        #expect(phone.pulled == (try Peek.log(temp.url("relay")).lastOffset()))
        #expect(phone.items == (try meshItems("a")))
        #expect(phone.items == (try meshItems("b")))
        #expect(phone.items[bolts]?.name == "Hex bolts")
        #expect(phone.items[UUID(uuidString: washers)!]?.quantity == 12)
        // The relay filed the phone's events in its feed for the phone, gap-free.
        let status = try ReplicaStatus.of(temp.url("a"))
        let feed = "phone-1@" + (try ReplicaStatus.of(temp.url("relay"))).replica_id
        #expect(status.cursor.contains { $0.replica_id == feed && $0.seq == 4 })
    }

    @Test("POST /events refuses a bad batch whole with the event's index; [] and limit=0 are empty; next_offset")
    func batchesAndPages() throws {
        try ok(["init"], "relay")
        let relay = try Daemon.start(data: temp.url("relay"))
        defer { _ = try? relay.stop() }
        let phone = SeedClient(replicaID: "phone-1", port: try port(relay))
        let item = UUID().uuidString.lowercased()
        func event(_ payload: String, id: String = UUID().uuidString.lowercased(), entity: String? = nil) -> String {
            """
            {"replica_event_id":"\(id)","entity_id":"\(entity ?? item)","payload":\(payload),"replica_id":"phone-1",\
            "replica_time_ms":1000,"replica_write_offset":1}
            """
        }
        let good = event(#"{"type":"Created","name":"Bolts","quantity":5}"#)
        let refused: [(String, String)] = [
            (event(#"{"type":"Teleported"}"#), "unknown item event type"),
            (event(#"{"type":"Renamed"}"#), "name"),
            (event(#"{"type":"Deleted"}"#, id: "not-a-uuid"), "is not a UUID"),
            (event(#"{"type":"Deleted"}"#, entity: "bolts"), "is not a UUID"),
            (
                #"{"replica_event_id":"\#(UUID().uuidString)","entity_id":"\#(item)","payload":{"type":"Deleted"}}"#,
                "missing field"
            ),
        ]
        for (bad, reason) in refused {
            let answer = try phone.request("POST", "/events", body: "[\(good),\(good),\(good),\(bad)]")
            let error = try JSONValue.parse(answer.body)["error"]
            #expect(answer.status == 422)
            #expect(error?["code"] == .string("invalid_event"))
            #expect(error?["index"] == .int(3))
            #expect(error?["message"]?.stringValue?.hasPrefix("event 3: ") == true, "\(answer.body)")
            #expect(error?["message"]?.stringValue?.contains(reason) == true, "\(answer.body)")
        }
        #expect(try Peek.eventCount(temp.url("relay")) == 0)
        let empty = try phone.request("POST", "/events", body: "[]")
        #expect(empty.status == 200 && empty.body.trimmingCharacters(in: .whitespacesAndNewlines) == "[]")

        // An edit of a deleted item is stored (the fold ignores it); no double-tap filter.
        let deleted = event(#"{"type":"Deleted"}"#)
        let late = event(#"{"type":"Renamed","name":"Ghost"}"#)
        let stored = try phone.request("POST", "/events", body: "[\(good),\(deleted),\(late),\(late)]")
        #expect(stored.status == 200)
        let again = try phone.request("POST", "/events", body: "[\(event(#"{"type":"Renamed","name":"Ghost"}"#))]")
        #expect(again.status == 200)
        #expect(try Peek.eventCount(temp.url("relay")) == 4)
        #expect(try Peek.log(temp.url("relay")).projection(Item.self, id: item)?.name == "Bolts")

        // next_offset is the last event's offset on every non-empty page, null only on an empty one.
        let first = try phone.page(after: nil, limit: 3)
        #expect(first.events.compactMap(\.serverOffset) == [1, 2, 3] && first.next == 3)
        let last = try phone.page(after: 3, limit: 3)
        #expect(last.events.compactMap(\.serverOffset) == [4] && last.next == 4)
        let end = try phone.page(after: 4, limit: 3)
        #expect(end.events.isEmpty && end.next == nil)
        let none = try phone.page(after: 0, limit: 0)
        #expect(none.events.isEmpty && none.next == nil)
    }

    @Test("an Undone is never served raw: the thin client is served the field it sets back")
    func undoReachesTheThinClient() throws {
        try ok(["init"], "relay")
        let relay = try Daemon.start(data: temp.url("relay"))
        defer { _ = try? relay.stop() }
        let phone = SeedClient(replicaID: "phone-1", port: try port(relay))
        let (bolts, nuts) = (UUID(), UUID())
        phone.store([(bolts, .created(name: "Bolts", quantity: 5)), (nuts, .created(name: "Nuts", quantity: 3))])
        try phone.sync(batch: 10)
        try ok(["item", "rename", bolts.uuidString.lowercased(), "Hex bolts"], "relay")
        try ok(["item", "note", bolts.uuidString.lowercased(), "aisle 4"], "relay")
        try ok(["item", "undo", bolts.uuidString.lowercased()], "relay")
        try ok(["item", "undo", bolts.uuidString.lowercased()], "relay")
        try ok(["item", "delete", nuts.uuidString.lowercased()], "relay")
        try ok(["item", "undo", nuts.uuidString.lowercased()], "relay")
        // Every page decodes as the seed's (the client throws otherwise); nothing served is an Undone.
        try phone.sync(batch: 2)
        let raw = try JSONValue.parse(try phone.request("GET", "/log?after=0&limit=100").body)
        guard case .array(let logged)? = raw["events"] else {
            Issue.record("no log")
            return
        }
        #expect(logged.filter { $0["payload"]?["type"] == .string("Undone") }.count == 3)
        #expect(phone.items[bolts] == SeedClient.SeedItem(name: "Bolts", quantity: 5))
        #expect(try meshItems("relay")[bolts] == phone.items[bolts])
        // The undo of a delete cannot be expressed: the seed's deletion is terminal.
        #expect(try meshItems("relay")[nuts]?.deleted == false)
        #expect(phone.items[nuts]?.deleted == true)
    }

    @Test("a device token reaches POST and GET /events only; the CLI issues and withdraws it while the daemon runs")
    func deviceTokens() throws {
        try ok(["init"], "relay")
        let tokenFile = temp.url("operator-token")
        try "operator-token-0123456789\n".write(to: tokenFile, atomically: true, encoding: .utf8)
        let phoneToken = try ok(["thin-client", "add", "phone-1"], "relay")
        let relay = try Daemon.start(data: temp.url("relay"), extra: ["--http-token-file", tokenFile.path])
        defer { _ = try? relay.stop() }
        let phone = SeedClient(replicaID: "phone-1", port: try port(relay), token: phoneToken)
        phone.store([(UUID(), .created(name: "Bolts", quantity: 5))])
        try phone.sync(batch: 10)
        #expect(phone.unsynced.isEmpty && phone.entries.count == 1)
        for path in ["/items", "/status", "/log", "/events/all", "/metrics"] {
            let refused = try phone.request("GET", path)
            #expect(refused.status == 403, "\(path): \(refused)")
            #expect(try JSONValue.parse(refused.body)["error"]?["code"] == .string("forbidden"))
        }
        let stranger = SeedClient(replicaID: "x", port: phone.port, token: "not-a-device-token-0123")
        #expect(try stranger.request("GET", "/events").status == 401)
        let operatorClient = SeedClient(replicaID: "x", port: phone.port, token: "operator-token-0123456789")
        #expect(try operatorClient.request("GET", "/items").status == 200)
        #expect(try operatorClient.request("GET", "/events").status == 200)

        // Issued while the daemon runs: counts at once.
        let tabletToken = try ok(["thin-client", "add", "tablet"], "relay")
        let tablet = SeedClient(replicaID: "tablet", port: phone.port, token: tabletToken)
        #expect(try tablet.request("GET", "/events").status == 200)
        #expect(try ok(["thin-client", "list"], "relay") == "phone-1\ntablet")
        let again = try Executables.peerd(["thin-client", "add", "tablet"], data: temp.url("relay"))
        #expect(again.status != 0 && again.stderr.contains("already has a token"))
        try ok(["thin-client", "remove", "phone-1"], "relay")
        #expect(try phone.request("GET", "/events").status == 401)
        #expect(try tablet.request("GET", "/events").status == 200)
        #expect(!(try String(contentsOf: temp.url("relay/thin-clients"), encoding: .utf8)).contains(tabletToken))
    }

    @Test("a device token with scopes pulls only events of its read scopes and pushes only to its write scopes")
    func deviceTokenScopes() throws {
        try ok(["init"], "relay")
        let token = try ok(["thin-client", "add", "phone-1", "--read", "team", "--write", "team"], "relay")
        try ok(["thin-client", "add", "tablet"], "relay")
        #expect(try ok(["thin-client", "list"], "relay") == "phone-1 read=team write=team\ntablet")
        let relay = try Daemon.start(data: temp.url("relay"), extra: ["--relay"])
        defer { _ = try? relay.stop() }
        for (name, scope) in [("plan", "team"), ("secret", "bob")] {
            let reply = try relay.api!.request(
                "POST", "/items", body: #"{"name":"\#(name)","quantity":1,"scope":"\#(scope)"}"#)
            #expect(reply.status == 201, "\(reply.text)")
        }
        let phone = SeedClient(replicaID: "phone-1", port: try port(relay), token: token)
        let page = try phone.request("GET", "/events")
        #expect(page.status == 200)
        guard case .array(let events)? = try JSONValue.parse(page.body)["events"] else {
            Issue.record("no events in \(page.body)")
            return
        }
        #expect(events.count == 1 && events.first?["scope"] == JSONValue.string("team"), "\(page.body)")

        func push(scope: String) throws -> (status: Int, body: String) {
            let body = """
                [{"replica_event_id":"\(UUID().uuidString.lowercased())","entity_id":"\(UUID().uuidString.lowercased())",\
                "payload":{"type":"Created","name":"Nuts","quantity":2},"replica_id":"phone-1","scope":"\(scope)",\
                "replica_time_ms":1796000000000}]
                """
            return try phone.request("POST", "/events", body: body)
        }
        let refused = try push(scope: "bob")
        #expect(refused.status == 403, "\(refused.body)")
        #expect(try JSONValue.parse(refused.body)["error"]?["code"] == .string("scope_not_writable"))
        #expect(try JSONValue.parse(refused.body)["error"]?["index"] == .int(0))
        #expect(try Peek.eventCount(temp.url("relay")) == 2)
        #expect(try push(scope: "team").status == 200)
        #expect(try Peek.eventCount(temp.url("relay")) == 3)
    }

    @Test("one event pushed to two relays is folded once and both reach the same state hash")
    func sameEventThroughTwoRelays() throws {
        try temp.cluster("relay-1", ["relay-2"])
        // Relay 2 is not connected yet, so the retry cannot be answered with relay 1's copy.
        let one = try Daemon.start(data: temp.url("relay-1"), extra: ["--relay"])
        var two = try Daemon.start(data: temp.url("relay-2"), extra: ["--relay"])
        defer { for daemon in [one, two] { _ = try? daemon.stop() } }
        let phone = SeedClient(replicaID: "phone-1", port: try port(one))
        let bolts = UUID()
        phone.store([(bolts, .created(name: "Bolts", quantity: 5))])
        try phone.sync(batch: 10)
        phone.store([(bolts, .renamed(name: "Nuts")), (bolts, .quantityChanged(quantity: 7))])
        // Relay 1 stores the batch but its answer is lost; the phone retries at relay 2.
        try phone.sendAndHangUp("POST", "/events", body: phone.pushBody(batch: 10)) {
            try Peek.eventCount(temp.url("relay-1")) == 3
        }
        phone.port = try port(two)
        try phone.push(batch: 10)
        #expect(try Peek.eventCount(temp.url("relay-2")) == 2)
        // Now the relays sync with each other.
        #expect(try two.stop() == 0)
        two = try Daemon.start(data: temp.url("relay-2"), peers: [one.address], extra: ["--relay"])
        phone.port = try port(two)
        try phone.pull(batch: 10)
        let statuses = try Convergence.wait([temp.url("relay-1"), temp.url("relay-2")])
        // Five rows on each relay (the batch in both feeds), nothing forked, one state.
        #expect(statuses.map(\.event_count) == [5, 5])
        #expect(statuses.map(\.forks) == [0, 0])
        #expect(try meshItems("relay-1")[bolts] == SeedClient.SeedItem(name: "Nuts", quantity: 7))
        #expect(phone.items == (try meshItems("relay-2")))
        // Each relay serves one copy of every event.
        for daemon in [one, two] {
            let served = try SeedClient(replicaID: "other", port: try port(daemon)).page(after: nil, limit: 100)
            #expect(served.events.count == 3, "\(daemon.name)")
            #expect(Set(served.events.map(\.eventID)).count == 3)
        }
        let check = try Executables.peerd(["check"], data: temp.url("relay-2"))
        #expect(check.status == 0, "\(check.stdout)\(check.stderr)")
    }

    @Test(
        "two relays with replicas and thin clients split across them converge to one state hash",
        arguments: [false, true])
    func replicasAndThinClientsAcrossTwoRelays(sharingPostgreSQL: Bool) throws {
        // The same scenario with the two relays on one PostgreSQL store (docs/relay.md).
        let postgres = try sharingPostgreSQL ? PostgresServer.start() : nil
        let store = postgres.map { ["--store", $0.conninfo] } ?? []
        try temp.cluster("relay-1", ["relay-2", "a", "b"])
        let one = try Daemon.start(data: temp.url("relay-1"), extra: ["--relay"] + store)
        let two = try Daemon.start(data: temp.url("relay-2"), peers: [one.address], extra: ["--relay"] + store)
        let a = try Daemon.start(data: temp.url("a"), peers: [one.address])
        let b = try Daemon.start(data: temp.url("b"), peers: [two.address])
        defer { for daemon in [a, b, two, one] { _ = try? daemon.stop() } }
        let phones = [
            SeedClient(replicaID: "phone-1", port: try port(one)),
            SeedClient(replicaID: "phone-2", port: try port(two)),
        ]
        let (bolts, nuts) = (UUID(), UUID())
        phones[0].store([(bolts, .created(name: "Bolts", quantity: 5)), (bolts, .noteChanged(note: "bin 3"))])
        phones[1].store([(nuts, .created(name: "Nuts", quantity: 9))])
        for phone in phones { try phone.sync(batch: 500) }
        let washers = try ok(["item", "create", "Washers", "12"], "a")
        try ok(["item", "qty", washers, "11"], "b")
        phones[1].store([(bolts, .quantityChanged(quantity: 6))])
        try phones[1].sync(batch: 500)

        let everyone = ["relay-1", "relay-2", "a", "b"].map { temp.url($0) }
        let statuses = try Convergence.wait(everyone)
        #expect(Set(statuses.map(\.state_hash)).count == 1)
        #expect(statuses.allSatisfy { $0.event_count == 6 && $0.forks == 0 })
        // Each phone pulls from its own relay and ends with the mesh's items.
        for phone in phones {
            try phone.pull(batch: 2)
            #expect(phone.items == (try meshItems("a")), "\(phone.replicaID)")
        }
        #expect(phones[0].items[bolts] == SeedClient.SeedItem(name: "Bolts", quantity: 6, note: "bin 3"))
        #expect(phones[0].items[UUID(uuidString: washers)!]?.quantity == 11)
        // The replicas sit in the hub, on relays only: each given one, and told of the other by peer exchange.
        for replica in [a, b] {
            #expect(try replica.peerTable().connectedRoles.allSatisfy { $0 == "relay" }, "\(replica.name)")
        }
    }
}
