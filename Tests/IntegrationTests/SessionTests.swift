import DaemonClient
import Foundation
import Replica
import SyncProtocol
import TestSupport
import Testing

/// Single-writer sessions among real `peerd run` processes on loopback
/// (docs/sessions.md): an offline takeover, claims through one and two
/// relays, a forced release, and a thin client reading a dropped tail.
@Suite("peerd: single-writer sessions")
struct SessionIntegrationTests {
    let temp: TemporaryDirectory
    init() throws { temp = try TemporaryDirectory() }

    @discardableResult
    func ok(_ arguments: [String], _ dir: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        try temp.peerdOK(arguments, dir, sourceLocation: sourceLocation)
    }

    func call(_ daemon: Daemon, _ method: String, _ path: String, _ body: String? = nil) throws -> (
        status: Int, json: JSONValue
    ) {
        try Self.call(try #require(daemon.api), method, path, body)
    }

    static func call(_ api: DaemonEndpoint, _ method: String, _ path: String, _ body: String? = nil) throws -> (
        status: Int, json: JSONValue
    ) {
        let reply = try api.request(method, path, body: body)
        return (reply.status, try JSONValue.parse(reply.text))
    }

    /// The ids of the dropped events and their holders, as `GET …/dropped` lists them.
    func droppedTail(_ daemon: Daemon, _ item: String) throws -> [String] {
        let reply = try call(daemon, "GET", "/entities/item/\(item)/dropped")
        guard case .array(let rows)? = reply.json["dropped"] else { return ["not a list: \(reply.json)"] }
        return rows.map { row in
            "\(row["event"]?["replica_event_id"]?.stringValue ?? "?") held by \(row["holder"]?.stringValue ?? "?")"
        }
    }

    func replicaID(_ dir: String) throws -> String {
        try Peek.log(temp.url(dir)).replicaID
    }

    func waitForRelays(_ daemons: [Daemon], count: Int = 1) async throws {
        for daemon in daemons {
            try await Poll.eventually("\(daemon.name) connects to its relays", details: { daemon.stderr }) {
                try daemon.peerTable().connectedRoles.filter { $0 == "relay" }.count >= count
            }
        }
    }

    @Test("takeover while the old holder is offline and keeps writing: same state and dropped tail everywhere")
    func offlineTakeover() throws {
        try temp.cluster("a", ["b", "c"])
        var a = try Daemon.start(data: temp.url("a"))
        let b = try Daemon.start(data: temp.url("b"), peers: [a.address])
        let c = try Daemon.start(data: temp.url("c"), peers: [a.address, b.address])
        defer { for daemon in [a, b, c] { _ = try? daemon.stop() } }
        let match = try a.createItem("Match", quantity: 0)
        let claimed = try call(a, "POST", "/entities/item/\(match)/claim")
        #expect(claimed.status == 200, "\(claimed.json)")
        #expect(claimed.json["mode"] == .string("optimistic"))
        try ok(["item", "qty", match, "1"], "a")
        try Convergence.wait([temp.url("a"), temp.url("b"), temp.url("c")])
        // b may not write while a holds it.
        let refused = try call(b, "POST", "/items/\(match)/events", #"{"type":"QuantityChanged","quantity":9}"#)
        #expect(refused.status == 409)
        #expect(refused.json["error"]?["code"] == .string("entity_held"))
        #expect(refused.json["error"]?["holder"] == .string(try replicaID("a")))

        // a goes offline and keeps writing to its files; b takes over and writes.
        #expect(try a.stop() == 0, "\(a.stderr)")
        let blind = try Executables.peerd(["claim", "item", match], data: temp.url("b"))
        #expect(blind.status != 0 && blind.stderr.contains("is held by"), "\(blind.stderr)")
        let takeover = try ok(["claim", "item", match, "--takeover"], "b")
        #expect(takeover.hasPrefix("claimed item \(match) (optimistic)"), "\(takeover)")
        try ok(["item", "qty", match, "2"], "a")
        try ok(["item", "qty", match, "3"], "a")
        try ok(["item", "qty", match, "10"], "b")

        a = try Daemon.start(data: temp.url("a"), peers: [b.address, c.address])
        try Convergence.wait([temp.url("a"), temp.url("b"), temp.url("c")])
        let tails = try [a, b, c].map { try droppedTail($0, match) }
        #expect(tails[0].count == 2, "\(tails[0])")
        #expect(tails[0] == tails[1] && tails[1] == tails[2], "\(tails)")
        for daemon in [a, b, c] {
            let item = try call(daemon, "GET", "/items/\(match)")
            #expect(item.json["quantity"] == .int(10), "\(daemon.name): \(item.json)")
            let session = try call(daemon, "GET", "/entities/item/\(match)/session")
            #expect(session.json["holder"] == .string(try replicaID("b")))
            #expect(session.json["dropped_count"] == .int(2))
        }
        // a learns it was taken over: 409 naming b and its two writes not applied, the CLI says the same.
        let late = try call(a, "POST", "/items/\(match)/events", #"{"type":"QuantityChanged","quantity":4}"#)
        #expect(late.status == 409)
        #expect(late.json["error"]?["code"] == .string("taken_over"))
        #expect(late.json["error"]?["holder"] == .string(try replicaID("b")))
        #expect(late.json["error"]?["dropped_own"] == .int(2))
        let cli = try Executables.peerd(["item", "qty", match, "4"], data: temp.url("a"))
        #expect(cli.status == 1)
        #expect(
            cli.stderr.contains("was taken over by \(try replicaID("b")); 2 of this replica's writes"), "\(cli.stderr)")
        // ... and its change stream says so after b's claim.
        let stream = try #require(a.api).events("/changes?after=0")
        defer { stream.close() }
        var sawClaim = false
        let bID = try replicaID("b")
        while let change = try stream.next() {
            if sawClaim {
                #expect(change.event == "taken_over", "\(change)")
                let data = try JSONValue.parse(change.data)
                #expect(data["holder"] == .string(try replicaID("b")))
                #expect(data["dropped_own"] == .int(2))
                break
            }
            sawClaim = change.data.contains(#""type":"Claimed""#) && change.data.contains(bID)
        }
        #expect(sawClaim)
    }

    @Test("two claims at once through a relay: exactly one is granted, the other refused naming the winner")
    func simultaneousClaimsThroughOneRelay() async throws {
        try temp.cluster("relay", ["a", "b"])
        let relay = try Daemon.start(data: temp.url("relay"), extra: ["--relay"])
        let a = try Daemon.start(data: temp.url("a"), peers: [relay.address])
        let b = try Daemon.start(data: temp.url("b"), peers: [relay.address])
        defer { for daemon in [relay, a, b] { _ = try? daemon.stop() } }
        try await waitForRelays([a, b])
        try await expectOneWinner(a, b, everywhere: [relay, a, b])
    }

    @Test("two claims at once through two relays: exactly one is granted")
    func simultaneousClaimsThroughTwoRelays() async throws {
        try temp.cluster("r1", ["r2", "a", "b"])
        let r1 = try Daemon.start(data: temp.url("r1"), extra: ["--relay"])
        let r2 = try Daemon.start(data: temp.url("r2"), peers: [r1.address], extra: ["--relay"])
        let a = try Daemon.start(data: temp.url("a"), peers: [r1.address], extra: ["--topology", "hub"])
        let b = try Daemon.start(data: temp.url("b"), peers: [r2.address], extra: ["--topology", "hub"])
        defer { for daemon in [r1, r2, a, b] { _ = try? daemon.stop() } }
        try await waitForRelays([r1, r2, a, b])
        try await expectOneWinner(a, b, everywhere: [r1, r2, a, b])
    }

    @Test("two claims at once through two relays on one PostgreSQL that never meet: exactly one is granted")
    func simultaneousClaimsThroughRelaysOnOneStore() async throws {
        let postgres = try PostgresServer.start()
        try temp.cluster("r1", ["r2", "a", "b"])
        // Not given each other: each relay answers claims, one at a time under the store's lock.
        let r1 = try Daemon.start(data: temp.url("r1"), extra: ["--relay", "--store", postgres.conninfo])
        let r2 = try Daemon.start(data: temp.url("r2"), extra: ["--relay", "--store", postgres.conninfo])
        let a = try Daemon.start(data: temp.url("a"), peers: [r1.address], extra: ["--topology", "hub"])
        let b = try Daemon.start(data: temp.url("b"), peers: [r2.address], extra: ["--topology", "hub"])
        defer { for daemon in [r1, r2, a, b] { _ = try? daemon.stop() } }
        try await waitForRelays([a, b])
        #expect(try r1.peerTable().connectedRoles.filter { $0 == "relay" }.isEmpty)
        for _ in 0..<3 { try await expectOneWinner(a, b, everywhere: [r1, r2, a, b]) }
        withExtendedLifetime(postgres) {}
    }

    /// `a` and `b` claim one entity at the same moment; exactly one holds it, on every node.
    private func expectOneWinner(_ a: Daemon, _ b: Daemon, everywhere: [Daemon]) async throws {
        let entity = "/entities/match/final-\(UUID().uuidString.lowercased())"
        let (apiA, apiB) = (try #require(a.api), try #require(b.api))
        async let first = Self.call(apiA, "POST", entity + "/claim", #"{"wait_ms":20000}"#)
        async let second = Self.call(apiB, "POST", entity + "/claim", #"{"wait_ms":20000}"#)
        let answers = try await [first, second]
        let granted = answers.filter { $0.status == 200 }
        let refused = answers.filter { $0.status == 409 }
        #expect(granted.count == 1 && refused.count == 1, "\(answers)")
        let winner = try #require(granted.first?.json["holder"]?.stringValue)
        #expect(granted.first?.json["mode"] == .string("granted"))
        // Refused by the relay, or, when the grant reached the loser first, by its own replica.
        let code = refused.first?.json["error"]?["code"]?.stringValue ?? ""
        #expect(["claim_refused", "entity_held"].contains(code), "\(answers)")
        #expect(refused.first?.json["error"]?["holder"] == .string(winner))
        try await Poll.eventually("every node shows \(winner) as the holder") {
            try everywhere.allSatisfy { try call($0, "GET", entity + "/session").json["holder"] == .string(winner) }
        }
    }

    @Test("a lost device's session is ended by a forced release, and the others write again")
    func forcedRelease() throws {
        try temp.cluster("a", ["b"])
        let a = try Daemon.start(data: temp.url("a"))
        let b = try Daemon.start(data: temp.url("b"), peers: [a.address])
        defer { _ = try? b.stop() }
        let match = try a.createItem("Match", quantity: 0)
        try ok(["claim", "item", match], "a")
        try Convergence.wait([temp.url("a"), temp.url("b")])
        #expect(try a.kill())  // the device is lost

        let notMine = try Executables.peerd(["release", "item", match], data: temp.url("b"))
        #expect(notMine.status == 1 && notMine.stderr.contains("release it with force"), "\(notMine.stderr)")
        #expect(
            try call(b, "POST", "/items/\(match)/events", #"{"type":"QuantityChanged","quantity":5}"#).status == 409)
        try ok(["release", "item", match, "--force"], "b")
        let written = try call(b, "POST", "/items/\(match)/events", #"{"type":"QuantityChanged","quantity":5}"#)
        #expect(written.status == 201, "\(written.json)")
        #expect(try call(b, "GET", "/entities/item/\(match)/session").json["holder"] == .null)
        #expect(try ok(["claim", "item", match], "b").hasPrefix("claimed item \(match)"))
    }

    @Test("a thin client of the relay sees the dropped tail through the HTTP API with its device token")
    func thinClientSeesDroppedTail() async throws {
        try temp.cluster("relay", ["a"])
        let phoneToken = try ok(["thin-client", "add", "phone-1"], "relay")
        let relay = try Daemon.start(data: temp.url("relay"), extra: ["--relay"])
        let a = try Daemon.start(data: temp.url("a"), peers: [relay.address])
        defer { for daemon in [relay, a] { _ = try? daemon.stop() } }
        try await waitForRelays([a])
        let matchID = UUID()
        let match = matchID.uuidString.lowercased()
        let phone = SeedClient(replicaID: "phone-1", port: try #require(relay.api).port, token: phoneToken)
        phone.store([(matchID, .created(name: "Match", quantity: 0))])
        try phone.sync(batch: 10)
        try Convergence.wait([temp.url("relay"), temp.url("a")])
        let claimed = try call(a, "POST", "/entities/item/\(match)/claim")
        #expect(claimed.json["mode"] == .string("granted"), "\(claimed.json)")
        try Convergence.wait([temp.url("relay"), temp.url("a")])
        // The phone knows nothing of sessions and writes on; the relay stores it, the fold drops it.
        phone.clockMs = Int64(Date().timeIntervalSince1970 * 1000) + 1_000
        phone.store([(matchID, .quantityChanged(quantity: 7))])
        try phone.sync(batch: 10)
        try Convergence.wait([temp.url("relay"), temp.url("a")])

        let dropped = try phone.request("GET", "/entities/item/\(match)/dropped")
        #expect(dropped.status == 200, "\(dropped)")
        let body = try JSONValue.parse(dropped.body)
        #expect(body["count"] == .int(1))
        #expect(body["holder"] == .string(try replicaID("a")))
        guard case .array(let rows)? = body["dropped"], let row = rows.first else {
            Issue.record("no dropped rows: \(dropped.body)")
            return
        }
        #expect(row["event"]?["payload"]?["quantity"] == .int(7))
        #expect(row["holder"] == .string(try replicaID("a")))
        #expect(try phone.request("GET", "/entities/item/\(match)/session").status == 200)
        #expect(try phone.request("POST", "/entities/item/\(match)/claim").status == 403)
        #expect(try call(relay, "GET", "/items/\(match)").json["quantity"] == .int(0))
    }

    @Test("inside a session the holder's double tap is one event and undos stop at the consecutive limit")
    func guardsInsideASession() throws {
        try temp.cluster("a", [])
        let a = try Daemon.start(data: temp.url("a"))
        defer { _ = try? a.stop() }
        let match = try a.createItem("Match", quantity: 0)
        #expect(try call(a, "POST", "/entities/item/\(match)/claim").status == 200)
        let goal = #"{"type":"QuantityChanged","quantity":1}"#
        let tap = try call(a, "POST", "/items/\(match)/events", goal)
        let doubleTap = try call(a, "POST", "/items/\(match)/events", goal)
        #expect(tap.status == 201 && doubleTap.status == 201)
        #expect(tap.json["replica_event_id"] == doubleTap.json["replica_event_id"])
        for quantity in 2...11 {
            #expect(
                try call(a, "POST", "/items/\(match)/events", #"{"type":"QuantityChanged","quantity":\#(quantity)}"#)
                    .status == 201)
        }
        for _ in 1...10 { #expect(try call(a, "POST", "/items/\(match)/undo").status == 201) }
        let eleventh = try call(a, "POST", "/items/\(match)/undo")
        #expect(eleventh.status == 422)
        #expect(eleventh.json["error"]?["code"] == .string("cannot_undo"))
        #expect(try call(a, "GET", "/items/\(match)").json["quantity"] == .int(1))
        #expect(try call(a, "GET", "/entities/item/\(match)/session").json["holder"] == .string(try replicaID("a")))
    }
}
