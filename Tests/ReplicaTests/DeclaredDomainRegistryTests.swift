import Foundation
import TestSupport
import Testing

@testable import Replica

/// Declarations as the log holds them (docs/domains.md "How declarations
/// travel", "Declaring"): they travel as events, the highest version wins
/// whatever the order they arrive in, a change refolds its type, and every
/// connection and replica folds under the same one.
@Suite("Declared domains in the log")
struct DeclaredDomainRegistryTests {
    let directory: TemporaryDirectory
    init() throws { directory = try TemporaryDirectory() }

    /// `inspection` at `version`; from version 2 on `FindingRecorded` adds
    /// its `count` rather than 1, so entities with findings refold differently.
    static func inspection(version: Int = 1, scope: String? = nil) -> String {
        let adds = version >= 2 ? #"{"add":"findings","from":"count"}"# : #"{"add":"findings","value":1}"#
        let scopeMember = scope.map { #""scope":"\#($0)","# } ?? ""
        return """
            {"entity_type":"inspection","version":\(version),\(scopeMember)
             "fields":{"site":{"type":"string"},"status":{"type":"string","default":"open"},
                       "findings":{"type":"integer"},"checklist":{"type":"set","of":"string"}},
             "events":{
              "Opened":{"fields":{"site":{"type":"string"}},"effects":[{"set":"site","from":"site"}]},
              "Ticked":{"fields":{"item":{"type":"string"}},"effects":[{"insert":"checklist","from":"item"}]},
              "FindingRecorded":{"fields":{"count":{"type":"integer","optional":true}},"effects":[\(adds)]},
              "Closed":{"effects":[{"set":"status","value":"closed"}]},
              "Deleted":{"effects":[{"delete":true}]}}}
            """
    }

    static func declaration(_ text: String, signer: TestSigner? = nil) throws -> DeclarationEvent {
        let json = try JSONValue.parse(text)
        guard let signer else { return try DeclarationEvent(declarationJSON: json) }
        return try DeclarationEvent(
            declarationJSON: json, adminKey: signer.publicKey,
            signature: signer.sign(DeclarationEvent.signingMessage(json)))
    }

    func log(_ name: String, trust: DomainTrust? = nil) throws -> EventLog {
        var options = EventLog.Options()
        options.durability = .normal
        options.domainTrust = trust
        return try EventLog.create(at: directory.path("\(name).db"), replicaID: name, options: options)
    }

    func open(_ name: String, trust: DomainTrust? = nil) throws -> EventLog {
        var options = EventLog.Options()
        options.durability = .normal
        options.domainTrust = trust
        return try EventLog.open(at: directory.path("\(name).db"), options: options)
    }

    static func event(_ type: String, _ fields: String = "") -> String {
        #"{"type":"\#(type)"\#(fields.isEmpty ? "" : ",")\#(fields)}"#
    }

    func appendInspection(_ log: EventLog, id: String) throws {
        for payload in [
            Self.event("Opened", #""site":"North gate""#), Self.event("Ticked", #""item":"fence""#),
            Self.event("FindingRecorded", #""count":3"#), Self.event("Closed"),
        ] {
            try log.append(NewEvent(entityType: "inspection", entityID: id, payload: payload))
        }
    }

    func all(_ log: EventLog) throws -> [Event] { try log.events(after: 0, limit: 10_000).map(\.event) }

    @Test("a declared type folds its events, and an undeclared type's events are kept without state")
    func declaredTypeFolds() throws {
        let log = try log("a")
        try log.append(
            NewEvent(entityType: "inspection", entityID: "i1", payload: Self.event("Opened", #""site":"x""#)))
        #expect(try log.state(entityType: "inspection", entityID: "i1") == nil)
        try log.declare(try Self.declaration(Self.inspection()))
        try appendInspection(log, id: "i2")
        // The event stored before the declaration folds once it is declared.
        #expect(
            try log.state(entityType: "inspection", entityID: "i1")
                == #"{"checklist":[],"deleted":false,"findings":0,"id":"i1","last_modified_ms":"#
                + "\(try log.events(entityType: "inspection", entityID: "i1")[0].event.timeMs),"
                + #""site":"x","status":"open"}"#)
        let i2 = try JSONValue.parse(try #require(try log.state(entityType: "inspection", entityID: "i2")))
        #expect(i2["findings"] == .int(1))
        #expect(i2["checklist"] == .array([.string("fence")]))
        #expect(i2["status"] == .string("closed"))
        #expect(try log.states(entityType: "inspection").map(\.id) == ["i1", "i2"])
        #expect(try log.states(entityType: "inspection", after: "i1").map(\.id) == ["i2"])
        #expect(try log.declaredDomains().map(\.version) == [1])
    }

    @Test("declarations and events delivered in any order fold to the same states on every replica", arguments: 1...8)
    func anyOrderConverges(seed: UInt64) throws {
        let writer = try log("writer")
        try writer.declare(try Self.declaration(Self.inspection()))
        for id in ["i1", "i2", "i3"] { try appendInspection(writer, id: id) }
        try writer.declare(try Self.declaration(Self.inspection(version: 2)), acceptRefold: true)
        try writer.append(NewEvent(entityType: "inspection", entityID: "i4", payload: Self.event("FindingRecorded")))
        // Each feed in order (as sync delivers it), the feeds interleaved at random.
        let feeds = Dictionary(grouping: try all(writer), by: \.feed).values.map { $0.sorted { $0.seq < $1.seq } }
            .sorted { $0[0].feed.scope < $1[0].feed.scope }
        var rng = SplitMix64(seed: seed)
        let reader = try log("reader-\(seed)")
        for batch in RandomDelivery.batches(
            of: feeds, using: &rng, repeatOneIn: 5, size: { Int.random(in: 1...4, using: &$0) })
        {
            try reader.ingest(batch)
        }
        #expect(try reader.stateHash() == (try writer.stateHash()))
        #expect(try reader.declaredDomains().map(\.version) == [2])
        let i1 = try JSONValue.parse(try #require(try reader.state(entityType: "inspection", entityID: "i1")))
        #expect(i1["findings"] == .int(3))
        // Missing count under version 2: optional, so the add takes nothing (an integer's default).
        #expect(try reader.state(entityType: "inspection", entityID: "i4") != nil)
    }

    @Test("a declaration that would refold existing entities differently is refused until the refold is accepted")
    func refoldNeedsAcceptance() throws {
        let log = try log("a")
        try log.declare(try Self.declaration(Self.inspection()))
        try appendInspection(log, id: "i1")
        try log.append(
            NewEvent(entityType: "inspection", entityID: "i2", payload: Self.event("Opened", #""site":"y""#)))
        let before = try log.stateHash()
        #expect(throws: DeclarationRefusal.refoldNeeded(entityType: "inspection", changed: ["i1"], total: 2)) {
            try log.declare(try Self.declaration(Self.inspection(version: 2)))
        }
        #expect(try log.stateHash() == before)
        #expect(try log.declaredDomains().map(\.version) == [1])
        try log.declare(try Self.declaration(Self.inspection(version: 2)), acceptRefold: true)
        let i1 = try JSONValue.parse(try #require(try log.state(entityType: "inspection", entityID: "i1")))
        #expect(i1["findings"] == .int(3))
        #expect(try log.stateHash() != before)
        // A change that refolds nothing differently needs no acceptance.
        try log.declare(try Self.declaration(Self.inspection(version: 3)))
        #expect(try log.declaredDomains().map(\.version) == [3])
    }

    @Test("a version not above the held one, a Swift type, and an unsigned declaration under an admin are refused")
    func localRefusals() throws {
        let log = try log("a")
        try log.declare(try Self.declaration(Self.inspection(version: 2)))
        #expect(throws: DeclarationRefusal.versionNotNewer(entityType: "inspection", held: 2, given: 2)) {
            try log.declare(try Self.declaration(Self.inspection(version: 2)))
        }
        #expect(throws: DeclarationRefusal.builtIn(entityType: "item")) {
            try log.declare(try Self.declaration(DomainDeclaration.itemTwin()))
        }
        let admin = TestSigner.generate()
        let guarded = try self.log("guarded", trust: .admin(admin.publicKey))
        #expect(throws: DeclarationRefusal.needsAdminSignature(adminKey: admin.publicKey)) {
            try guarded.declare(try Self.declaration(Self.inspection()))
        }
        #expect(throws: DeclarationRefusal.needsAdminSignature(adminKey: admin.publicKey)) {
            try guarded.declare(try Self.declaration(Self.inspection(), signer: TestSigner.generate()))
        }
        var forged = try Self.declaration(Self.inspection(), signer: admin)
        forged.declarationJSON = try JSONValue.parse(Self.inspection(version: 9))
        forged.declaration = try DomainDeclaration(json: forged.declarationJSON)
        #expect(throws: DeclarationRefusal.badSignature) { try guarded.declare(forged) }
        try guarded.declare(try Self.declaration(Self.inspection(), signer: admin))
        #expect(try guarded.declaredDomains().first?.signedBy == admin.publicKey)
        #expect(try log.eventCount() == 1)
    }

    @Test("two declarations of one version: the later in canonical order counts on every replica")
    func sameVersionTieBreak() throws {
        let a = try log("a")
        let b = try log("b")
        try a.declare(try Self.declaration(Self.inspection(version: 1)))
        try b.declare(try Self.declaration(Self.inspection(version: 1, scope: "inspections")))
        let fromA = try all(a)
        let fromB = try all(b)
        try a.ingest(fromB)
        try b.ingest(fromA)
        let later = (fromA + fromB).max { $0.orderKey < $1.orderKey }!
        #expect(try a.declaredDomains().map(\.declaredBy) == [later.feed.replicaID])
        #expect(try b.declaredDomains().map(\.declaredBy) == [later.feed.replicaID])
        #expect(try a.stateHash() == (try b.stateHash()))
    }

    @Test("events that do not fit the declaration are poison, and recounted when a declaration makes them fit")
    func poisonRecounted() throws {
        let a = try log("a")
        try a.declare(try Self.declaration(Self.inspection()))
        // A peer's event of a type version 1 does not declare: stored, folded as poison.
        let stranger = Event(
            eventID: UUID(), feed: FeedID(replicaID: "peer"), seq: 1, timeMs: 1_000, entityType: "inspection",
            entityID: "i1", payload: Self.event("Reopened"))
        try a.ingest([stranger])
        #expect(try a.poisonEventCount() == 1)
        let v2 = Self.inspection(version: 2).replacingOccurrences(
            of: #""Closed":"#, with: #""Reopened":{"effects":[{"set":"status","value":"open"}]},"Closed":"#)
        try a.declare(try Self.declaration(v2), acceptRefold: true)
        #expect(try a.poisonEventCount() == 0)
        #expect(try a.state(entityType: "inspection", entityID: "i1") != nil)
    }

    @Test("a declaration's normal form reads back to the same declaration")
    func normalFormRoundTrips() throws {
        for text in [
            Self.inspection(), Self.inspection(version: 2, scope: "inspections"), DomainDeclaration.itemTwin(),
        ] {
            let declaration = try DomainDeclaration(json: try JSONValue.parse(text))
            #expect(try DomainDeclaration(json: declaration.json) == declaration)
        }
    }

    @Test("a parameter a type does not take is a mistake, named by its path")
    func strayParameters() throws {
        let cases: [(String, String)] = [
            (#"{"type":"string","scale":2}"#, "fields.x.scale"), (#"{"type":"integer","to":"person"}"#, "fields.x.to"),
            (#"{"type":"decimal","of":"string"}"#, "fields.x.of"),
            (#"{"type":"set","of":{"type":"string","colour":"red"}}"#, "fields.x.of.colour"),
        ]
        for (field, path) in cases {
            let text = #"{"entity_type":"t","version":1,"fields":{"x":\#(field)},"events":{"E":{"effects":[]}}}"#
            #expect(throws: DeclarationError.self) { try DomainDeclaration(json: try JSONValue.parse(text)) }
            do {
                _ = try DomainDeclaration(json: try JSONValue.parse(text))
            } catch let error as DeclarationError {
                #expect(error.path == path, "\(field): \(error)")
            }
        }
    }

    @Test("a reference fits a reference to any type, alone or as a set's element")
    func referencesFitAtEveryLevel() throws {
        let text = """
            {"entity_type":"crew","version":1,
             "fields":{"lead":{"type":"reference","to":"person"},
                       "members":{"type":"set","of":{"type":"reference","to":"person"}}},
             "events":{"Formed":{"fields":{"lead":{"type":"reference","to":"user"},
                                           "members":{"type":"list","of":{"type":"reference","to":"user"}}},
                                 "effects":[{"set":"lead","from":"lead"},{"insert":"members","from":"members"}]},
                       "Joined":{"fields":{"who":{"type":"reference","to":"user","nullable":false}},
                                 "effects":[{"insert":"members","from":"who"}]}}}
            """
        let declaration = try DomainDeclaration(json: try JSONValue.parse(text))
        #expect(declaration.events.keys.sorted() == ["Formed", "Joined"])
    }

    @Test("a thin client's retry is answered with the copy held, even once a new declaration refuses its payload")
    func thinClientRetryAfterANewDeclaration() throws {
        let log = try log("relay")
        try log.declare(try Self.declaration(Self.inspection()))
        let pushed = ThinClientEvent(
            eventID: UUID(), clientReplicaID: "tablet", scope: FeedID.defaultScope, timeMs: 1_000,
            entityType: "inspection", entityID: "i1", payload: Self.event("FindingRecorded"))
        let first = try log.acceptThinClientEvents([pushed])
        // Version 2 requires FindingRecorded's count (as the integration tests' twin does).
        let v2 = Self.inspection(version: 2).replacingOccurrences(
            of: #""count":{"type":"integer","optional":true}"#, with: #""count":{"type":"integer"}"#)
        try log.declare(try Self.declaration(v2), acceptRefold: true)
        #expect(try log.acceptThinClientEvents([pushed]) == first)
        #expect(throws: ThinClientBatchError.self) {
            var fresh = pushed
            fresh.eventID = UUID()
            try log.acceptThinClientEvents([fresh])
        }
        #expect(try log.eventCount() == 3)
    }

    @Test("catch-up pages carry declarations first, though they are dated after the events they fold")
    func declarationsTravelFirst() throws {
        let writer = try log("writer")
        for id in ["i1", "i2"] {
            try writer.append(
                NewEvent(entityType: "inspection", entityID: id, payload: Self.event("Opened", #""site":"x""#)))
        }
        try writer.declare(try Self.declaration(Self.inspection()))
        let ranges = try writer.cursor().heads.map { ($0.key, 1...$0.value) }
        let page = try writer.eventsInCanonicalOrder(of: ranges, maxEvents: 100, maxBytes: 1 << 20)
        #expect(page.map(\.entityType) == [DeclarationEvent.entityType, "inspection", "inspection"])
    }

    @Test("a second connection folds under a declaration another one stored")
    func secondConnectionReloads() throws {
        let writer = try log("a")
        let reader = try open("a")
        try writer.append(
            NewEvent(entityType: "inspection", entityID: "i1", payload: Self.event("Opened", #""site":"x""#)))
        #expect(try reader.state(entityType: "inspection", entityID: "i1") == nil)
        try writer.declare(try Self.declaration(Self.inspection()))
        #expect(try reader.state(entityType: "inspection", entityID: "i1") != nil)
        #expect(try reader.domain(of: "inspection")?.plan?.declaration.version == 1)
        // And validates local appends under it.
        #expect(throws: EventLogError.self) {
            try reader.append(NewEvent(entityType: "inspection", entityID: "i1", payload: Self.event("Opened")))
        }
    }

    @Test("a replica that joins a cluster with an admin key counts only the admin's declarations")
    func trustRecounts() throws {
        let admin = TestSigner.generate()
        let a = try log("a")
        try a.declare(try Self.declaration(Self.inspection(version: 1), signer: admin))
        try a.declare(try Self.declaration(Self.inspection(version: 2)))
        try appendInspection(a, id: "i1")
        #expect(try a.declaredDomains().map(\.version) == [2])
        let unsigned = try JSONValue.parse(try #require(try a.state(entityType: "inspection", entityID: "i1")))
        #expect(unsigned["findings"] == .int(3))
        let guarded = try open("a", trust: .admin(admin.publicKey))
        #expect(try guarded.declarationTrust() == .admin(admin.publicKey))
        #expect(try guarded.declaredDomains().map(\.version) == [1])
        let signed = try JSONValue.parse(try #require(try guarded.state(entityType: "inspection", entityID: "i1")))
        #expect(signed["findings"] == .int(1))
    }

    @Test("local appends are checked strictly, naming the field; nothing of the batch is stored")
    func localValidation() throws {
        let log = try log("a")
        try log.declare(try Self.declaration(Self.inspection()))
        let good = NewEvent(entityType: "inspection", entityID: "i1", payload: Self.event("Opened", #""site":"x""#))
        let cases: [(String, String)] = [
            (Self.event("Opened", #""site":5"#), #"field "site" of inspection Opened"#),
            (Self.event("Opened"), #"field "site" of inspection Opened is missing"#),
            (Self.event("Opened", #""site":"x","colour":"red""#), #"field "colour" is not declared"#),
            (Self.event("Exploded"), #"inspection has no event "Exploded""#),
        ]
        for (payload, message) in cases {
            let bad = NewEvent(entityType: "inspection", entityID: "i2", payload: payload)
            do {
                try log.append([good, bad])
                Issue.record("\(payload) was stored")
            } catch EventLogError.invalidEvent(let reason) {
                #expect(reason.contains(message), "\(reason)")
            }
        }
        #expect(try log.eventCount() == 1)
        // A declaration goes only through `declare`, with its checks.
        #expect(throws: EventLogError.self) {
            try log.append(
                NewEvent(
                    entityType: DeclarationEvent.entityType, entityID: "inspection",
                    payload: try Self.declaration(Self.inspection(version: 5)).payload,
                    scope: DeclarationEvent.scope))
        }
        #expect(try log.declaredDomains().map(\.version) == [1])
    }

    @Test("a declared type's events go only to the scope its declaration names; its sessions are not bound")
    func declaredScopeBindsLocalWrites() throws {
        let log = try log("a")
        try log.declare(try Self.declaration(Self.inspection(scope: "inspections")))
        let opened = Self.event("Opened", #""site":"x""#)
        #expect(throws: EventLogError.self) {
            try log.append(NewEvent(entityType: "inspection", entityID: "i1", payload: opened))
        }
        let stored = try log.append(
            NewEvent(entityType: "inspection", entityID: "i1", payload: opened, scope: "inspections"))
        #expect(stored.event.feed.scope == "inspections")
        let pushed = ThinClientEvent(
            eventID: UUID(), clientReplicaID: "tablet", scope: FeedID.defaultScope, timeMs: 1_000,
            entityType: "inspection", entityID: "i2", payload: opened)
        do {
            try log.acceptThinClientEvents([pushed])
            Issue.record("a push in the wrong scope was stored")
        } catch let error as ThinClientBatchError {
            #expect(error.wrongScope)
        }
        #expect(try log.eventCount() == 2)
    }
}
