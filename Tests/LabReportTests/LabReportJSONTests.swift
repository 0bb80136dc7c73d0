import Foundation
import LabReport
import TestSupport
import Testing

@Suite("lab-report.json")
struct LabReportJSONTests {
    @Test("json() then decode gives the same report")
    func roundTrip() throws {
        for report in [LabReport.sample(), LabReport.sample(nodes: 20, relays: 2, failing: false)] {
            #expect(try LabReport.decode(report.json()) == report)
        }
    }

    @Test("keys are in snake case and a node that never converged has no time")
    func snakeCaseKeys() throws {
        var report = LabReport.sample()
        report.nodes[0].convergedAfterHealMs = nil
        report.convergedAtMs = nil
        let text = String(decoding: try report.json(), as: UTF8.self)
        for key in [
            "\"converged_after_heal_ms\"", "\"peak_rss_bytes\"", "\"replica_id\"", "\"last_heal_ms\"",
            "\"duration_ms\"",
        ] {
            #expect(text.contains(key), "\(key) missing")
        }
        let decoded = try LabReport.decode(report.json())
        #expect(decoded.nodes[0].convergedAfterHealMs == nil)
        #expect(decoded.convergedAtMs == nil)
        #expect(decoded == report)
    }
}

extension LabReportJSONTests {
    @Test("the conflicts, the rate and what was left out are written in snake case and read back")
    func conflictsRoundTrip() throws {
        var report = LabReport.sample()
        report.configuration.rate = 25
        report.configuration.unavailable = ["clock": "no --clock-offset-ms"]
        report.conflicts = LabReport.Conflicts(
            concurrentEdits: 3, editsAgainstDelete: 1, undos: 2, claims: 4, takeovers: 1, claimsOverruled: 1,
            droppedEvents: 2)
        let text = String(decoding: try report.json(), as: UTF8.self)
        for key in [
            "\"concurrent_edits\" : 3", "\"edits_against_delete\" : 1", "\"claims_overruled\" : 1", "\"rate\" : 25",
        ] {
            #expect(text.contains(key), "\(key) missing")
        }
        #expect(try LabReport.decode(report.json()) == report)
        #expect(TerminalTable(report).lines.contains("left out: clock: no --clock-offset-ms"))
        #expect(TerminalTable(report).lines.contains("conflicts: " + report.conflicts!.summary))
    }

    @Test("a report written before the conflicts were counted reads back without them")
    func olderReportDecodes() throws {
        let report = LabReport.sample()
        let object = try #require(try JSONSerialization.jsonObject(with: report.json()) as? [String: Any])
        #expect(object["conflicts"] == nil && (object["configuration"] as? [String: Any])?["rate"] == nil)
        #expect(try LabReport.decode(report.json()).conflicts == nil)
    }
}

/// The conflicts counted from a run's writes and faults, on made-up writes.
struct ConflictTallyTests {
    typealias Write = LabReport.Write

    static func write(_ node: String, _ atMs: Int64, _ kind: String, _ item: String = "a", ok: Bool = true) -> Write {
        Write(node: node, atMs: atMs, kind: kind, item: item, acknowledged: ok, refusal: ok ? nil : "entity_held")
    }

    @Test("edits of one item on two nodes within a second are concurrent; on one node, or far apart, not")
    func concurrentEdits() {
        let writes = [
            Self.write("n1", 1_000, "rename"), Self.write("n2", 1_400, "quantity"),  // concurrent
            Self.write("n1", 1_600, "note"),  // concurrent with n2's
            Self.write("n3", 9_000, "rename"),  // alone
            Self.write("n2", 9_100, "rename", "b"),  // another item
            Self.write("n1", 9_200, "rename", ok: false),  // not acknowledged
        ]
        #expect(LabReport.Conflicts.tally(writes, faults: []).concurrentEdits == 3)
    }

    @Test("edits far apart are concurrent while a partition kept their nodes apart")
    func partitionMakesConcurrent() {
        let writes = [Self.write("n1", 5_000, "rename"), Self.write("n3", 8_000, "rename")]
        let partition = LabReport.Fault(
            kind: "partition", startMs: 4_000, endMs: 9_000, nodes: ["n1"], description: "n1 | n2 n3")
        #expect(LabReport.Conflicts.tally(writes, faults: [partition]).concurrentEdits == 2)
        let sameSide = LabReport.Fault(
            kind: "partition", startMs: 4_000, endMs: 9_000, nodes: ["n1", "n3"], description: "n1 n3 | n2")
        #expect(LabReport.Conflicts.tally(writes, faults: [sameSide]).concurrentEdits == 0)
    }

    @Test("an edit on another node acknowledged after a delete, or just before it, is an edit against it")
    func editsAgainstDelete() {
        let writes = [
            Self.write("n1", 2_000, "rename"),  // long before: no conflict
            Self.write("n2", 4_500, "quantity"),  // just before
            Self.write("n3", 5_000, "delete"),
            Self.write("n1", 7_000, "note"),  // after, on a node that had not seen it
            Self.write("n3", 7_500, "note"),  // the deleting node: no conflict
        ]
        let conflicts = LabReport.Conflicts.tally(writes, faults: [])
        #expect(conflicts.editsAgainstDelete == 2)
    }

    @Test("undos, claims, takeovers and releases count when acknowledged; refusals by a holder count apart")
    func sessionsAndUndos() {
        let writes = [
            Self.write("n1", 1_000, "claim"), Self.write("n2", 1_000, "claim", ok: false),
            Self.write("n2", 2_000, "takeover"), Self.write("n2", 3_000, "release"),
            Self.write("n1", 4_000, "undo"), Self.write("n2", 4_200, "rename"),
            Self.write("n3", 4_300, "rename", ok: false),
            Write(node: "n3", atMs: 5_000, kind: "claim", item: "a", acknowledged: false, refusal: "claim_refused"),
            Write(node: "n3", atMs: 5_100, kind: "rename", item: "a", acknowledged: false, refusal: "no_answer"),
        ]
        let conflicts = LabReport.Conflicts.tally(writes, faults: [])
        #expect(conflicts.claims == 1 && conflicts.takeovers == 1 && conflicts.releases == 1)
        #expect(conflicts.undos == 1 && conflicts.undosAgainstEdit == 1)
        #expect(conflicts.refusedByHolder == 3, "entity_held twice and a relay's claim_refused, not no_answer")
        #expect(conflicts.claimsOverruled == nil && conflicts.droppedEvents == nil)
    }
}
