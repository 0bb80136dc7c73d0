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
