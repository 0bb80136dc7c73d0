import LabReport
import TestSupport
import Testing

@Suite("the terminal table")
struct TerminalTableTests {
    let report = LabReport.sample()

    @Test("each node has a row with its events, cursor, hash prefix, convergence time, bytes and peak RSS")
    func nodeRows() throws {
        let lines = TerminalTable(report).lines
        #expect(lines[0].hasPrefix("node  role"))
        for node in report.nodes {
            let row = try #require(lines.first { $0.hasPrefix(node.name + " ") }, "no row for \(node.name)")
            for figure in [
                node.role, Units.count(node.events), node.cursorSummary, String(node.stateHash.prefix(8)),
                node.convergedAfterHeal, Units.bytes(node.bytesSent), Units.bytes(node.bytesReceived),
                Units.mebibytes(node.peakRSSBytes),
            ] {
                #expect(row.contains(figure), "\(figure) missing from \(row)")
            }
        }
        #expect(lines.contains { $0.contains("Σ\(Units.count(report.nodes[0].cursorTotal)) in 5 feeds") })
    }

    @Test("columns are aligned: every row's hash starts under the header's")
    func alignedColumns() throws {
        let lines = TerminalTable(report).lines
        let header = lines[0]
        let hashColumn = try #require(header.range(of: "hash")).lowerBound.utf16Offset(in: header)
        for (node, row) in zip(report.nodes, lines.dropFirst()) {
            let hash = try #require(row.range(of: node.shortStateHash))
            #expect(hash.lowerBound.utf16Offset(in: row) == hashColumn, "\(row)")
        }
        #expect(lines.allSatisfy { !$0.hasSuffix(" ") })
    }

    @Test("a failed check is marked ✘ with its details, the verdict counts it, and the seed replays the run")
    func failedCheck() throws {
        let lines = TerminalTable(report).lines
        let failed = try #require(report.failedChecks.first)
        let index = try #require(lines.firstIndex(of: "  ✘ \(failed.name)"))
        #expect(Array(lines[(index + 1)...].prefix(failed.details.count)) == failed.details.map { "      " + $0 })
        #expect(lines.contains("  ✔ \(report.checks[0].name)"))
        #expect(lines.contains("NOT converged: 1 check failed"))
        #expect(
            lines.last
                == "seed 42  replay: peerd-lab --nodes 5 --duration 60s --seed 42 "
                + "--faults partition,loss,kill,clock,stop,delay")
    }

    @Test("a run whose checks all passed says so, and passed checks show no details")
    func passingRun() {
        let text = TerminalTable(LabReport.sample(failing: false)).text
        #expect(text.contains("\nconverged: every check passed\n"))
        #expect(!text.contains("✘"))
        #expect(!text.contains("fold of the union"))
    }

    @Test("no colour unless asked; asked, ✔, ✘ and the verdict are coloured")
    func colour() {
        #expect(!TerminalTable(report).text.contains("\u{1B}["))
        let coloured = TerminalTable(report, colour: true).text
        #expect(coloured.contains("\u{1B}[31m✘\u{1B}[0m"))
        #expect(coloured.contains("\u{1B}[32m✔\u{1B}[0m"))
        #expect(coloured.contains("\u{1B}[1;31mNOT converged: 1 check failed\u{1B}[0m"))
    }

    @Test("a node that never converged says never")
    func neverConverged() throws {
        var report = report
        report.nodes[2].convergedAfterHealMs = nil
        let row = try #require(TerminalTable(report).lines.first { $0.hasPrefix("n3 ") })
        #expect(row.contains(" never "))
    }
}
