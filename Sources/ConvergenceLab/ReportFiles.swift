import Foundation
import LabReport

/// Writes a run's reports into its report directory: `lab-report.json`
/// (the facts), `lab-report.html` (the page with the timeline) and
/// `summary.txt` (the terminal table, also printed at the end of a run).
public enum ReportFiles {
    /// Writes every report of `report` into `directory`; returns the summary text.
    @discardableResult
    public static func write(_ report: LabReport, extra: [String], to directory: URL) throws -> String {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try report.json().write(to: directory.appendingPathComponent("lab-report.json"))
        try Data(HTMLReport(report).html.utf8).write(to: directory.appendingPathComponent("lab-report.html"))
        let text = summary(report, extra: extra)
        try Data(text.utf8).write(to: directory.appendingPathComponent("summary.txt"))
        return text
    }

    /// What the run was, its notes (`extra`), then the terminal table: one
    /// row per node, the checks with their details, the verdict and the replay command.
    static func summary(_ report: LabReport, extra: [String]) -> String {
        let configuration = report.configuration
        let lines =
            [
                "peerd-lab: seed \(configuration.seed), \(configuration.nodes) nodes, \(configuration.relays) relays, "
                    + "\(configuration.durationMs / 1000) s of faults (\(configuration.faults.joined(separator: ",")))",
                "\(report.writes.count) writes (\(report.acknowledgedWrites) acknowledged; "
                    + String(
                        format: "%.1f", Double(report.writes.count) * 1000 / Double(max(configuration.durationMs, 1)))
                    + " a second over the duration), "
                    + "\(report.faults.count) faults, last heal at \(report.lastHealMs) ms, "
                    + (report.convergedAtMs.map { "converged at \($0) ms" } ?? "never converged"),
            ] + extra + [""]
        return lines.joined(separator: "\n") + "\n" + TerminalTable(report).text
    }
}
