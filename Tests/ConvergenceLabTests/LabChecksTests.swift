import ConvergenceLab
import Foundation
import LabReport
import Replica
import Testing

/// The checks after the last heal and the lab's own fold: pure functions,
/// fed here with nodes that agree and with nodes that do not, so that each
/// check is seen to fail and to name what is wrong.
struct LabChecksTests {
    static let item = "9f1c0a52-7d43-4c4b-9a6e-2f1b8d3e5a10"

    static func event(_ replica: String, _ seq: UInt64, _ timeMs: Int64, _ payload: String) -> Event {
        Event(
            eventID: UUID(), feed: FeedID(replicaID: replica), seq: seq, timeMs: timeMs, entityType: "item",
            entityID: item, payload: payload)
    }

    static func node(_ name: String, events: [Event], items: [String: ItemState], hash: String = "h", forks: Int64 = 0)
        -> NodeObservation
    {
        NodeObservation(
            name: name, cursor: ["r1/default": 2], stateHash: hash, forks: forks,
            eventIDs: Set(events.map { "\($0.eventID)".lowercased() }), items: items)
    }

    @Test("the fold of the union of exports takes each event once and folds the later rename")
    func foldOfUnion() throws {
        let created = Self.event("r1", 1, 1_000, #"{"type":"Created","name":"Bolts","quantity":5}"#)
        let renamed = Self.event("r2", 1, 2_000, #"{"type":"Renamed","name":"Nuts"}"#)
        let line = { (event: Event) in EventJSON.line(for: event, offset: nil, arrivalTimeMs: nil) }
        let union = try ReferenceFold.union([line(created) + "\n" + line(renamed), line(renamed)])
        #expect(union.count == 2)
        let items = try ReferenceFold.items(of: union)
        #expect(items[Self.item]?.name == "Nuts")
        #expect(items[Self.item]?.quantity == 5)
        #expect(items[Self.item]?.lastModifiedMs == 2_000)
    }

    @Test("nodes that agree pass every check")
    func agreeingNodesPass() throws {
        let events = [Self.event("r1", 1, 1_000, #"{"type":"Created","name":"Bolts","quantity":5}"#)]
        let reference = try ReferenceFold.items(of: events)
        let nodes = ["n1", "n2"].map { Self.node($0, events: events, items: reference) }
        let write = AcknowledgedWrite(
            index: 0, node: "n1", kind: "create", item: Self.item, eventID: "\(events[0].eventID)".lowercased())
        #expect(LabChecks.sameState(nodes).passed)
        #expect(LabChecks.sameEvents(nodes).passed)
        #expect(LabChecks.acknowledgedWritesEverywhere([write], nodes).passed)
        #expect(LabChecks.projectionsMatchFold(reference, nodes).passed)
        #expect(LabChecks.noForks(nodes).passed)
        #expect(LabChecks.retriesIdempotent([(write, write)]).passed)
    }

    @Test("a node without an event fails same-events and acknowledged-writes, named with the event")
    func missingEventNamed() throws {
        let events = [
            Self.event("r1", 1, 1_000, #"{"type":"Created","name":"Bolts","quantity":5}"#),
            Self.event("r1", 2, 2_000, #"{"type":"QuantityChanged","quantity":8}"#),
        ]
        let id = "\(events[1].eventID)".lowercased()
        let reference = try ReferenceFold.items(of: events)
        let nodes = [
            Self.node("n1", events: events, items: reference),
            Self.node("n2", events: [events[0]], items: try ReferenceFold.items(of: [events[0]]), hash: "other"),
        ]
        let sameEvents = LabChecks.sameEvents(nodes)
        #expect(!sameEvents.passed)
        #expect(sameEvents.details == ["n2 lacks 1 of the 2 events: \(id)"])
        let write = AcknowledgedWrite(index: 4, node: "n1", kind: "quantity", item: Self.item, eventID: id)
        let acknowledged = LabChecks.acknowledgedWritesEverywhere([write], nodes)
        #expect(
            acknowledged.details == [
                "write 4 (quantity of item \(Self.item) on n1, event \(id)) is missing on n2"
            ])
        let state = LabChecks.sameState(nodes)
        #expect(!state.passed && state.details[0].hasPrefix("n2 differs from n1: state hash other vs h"))
        let fold = LabChecks.projectionsMatchFold(reference, nodes)
        #expect(fold.details.count == 1)
        #expect(fold.details[0].hasPrefix("n2 item \(Self.item): node has name=Bolts quantity=5"), "\(fold)")
        #expect(fold.details[0].contains("the fold of the union has name=Bolts quantity=8"))
    }

    @Test("a fork and a retry answered with another event fail their checks, naming node and writes")
    func forksAndRetries() {
        let nodes = [Self.node("n1", events: [], items: [:]), Self.node("n2", events: [], items: [:], forks: 2)]
        #expect(LabChecks.noForks(nodes).details == ["n2 reports 2 forks"])
        let first = AcknowledgedWrite(index: 1, node: "n1", kind: "rename", item: Self.item, eventID: "a")
        let retry = AcknowledgedWrite(index: 7, node: "n1", kind: "retry", item: Self.item, eventID: "b")
        #expect(
            LabChecks.retriesIdempotent([(retry, first)]).details == [
                "write 7 on n1 retried write 1 and got event b, not a"
            ])
    }

    @Test("lab-report.json reads back as the report it was written from")
    func reportRoundTrip() throws {
        let report = LabReport(
            configuration: LabReport.Configuration(nodes: 2, relays: 0, durationMs: 60_000, seed: 9, faults: ["kill"]),
            startedAtMs: 1, elapsedMs: 70_000, lastHealMs: 59_000, convergedAtMs: 59_400,
            nodes: [
                LabReport.Node(
                    name: "n1", host: 1, role: "peer", replicaID: "r1", events: 3, cursor: ["r1/default": 3],
                    stateHash: "h", convergedAfterHealMs: 400, bytesSent: 10, bytesReceived: 12, peakRSSBytes: 4096)
            ],
            faults: [LabReport.Fault(kind: "kill", startMs: 2_000, endMs: 5_000, nodes: ["n1"], description: "kill")],
            writes: [LabReport.Write(node: "n1", atMs: 600, kind: "create", item: "i", acknowledged: true)],
            samples: [LabReport.Sample(node: "n1", atMs: 500, events: 0)],
            checks: [LabReport.Check(name: "same-state", passed: true, details: [])])
        let json = try report.json()
        #expect(try LabReport.decode(json) == report)
        let text = String(decoding: json, as: UTF8.self)
        #expect(text.contains("\"replica_id\"") && text.contains("\"peak_rss_bytes\""))
    }
}
