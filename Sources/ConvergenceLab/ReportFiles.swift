import Foundation
import LabReport

/// Writes a run's reports into its report directory: `lab-report.json`
/// and `summary.txt`, the plain summary that is also printed. The one place
/// where report renderers plug in.
public enum ReportFiles {
    /// Writes every report of `report` into `directory`; returns the summary text.
    @discardableResult
    public static func write(_ report: LabReport, extra: [String], to directory: URL) throws -> String {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try report.json().write(to: directory.appendingPathComponent("lab-report.json"))
        let text = summary(report, extra: extra)
        try Data(text.utf8).write(to: directory.appendingPathComponent("summary.txt"))
        return text
    }

    /// The plain summary: the seed, one line per node, one per check (with its details), the verdict.
    static func summary(_ report: LabReport, extra: [String]) -> String {
        let configuration = report.configuration
        var lines = [
            "peerd lab: seed \(configuration.seed), \(configuration.nodes) nodes, \(configuration.relays) relays, "
                + "\(configuration.durationMs / 1000) s of faults (\(configuration.faults.joined(separator: ",")))",
            "\(report.writes.count) writes (\(report.writes.filter(\.acknowledged).count) acknowledged), "
                + "\(report.faults.count) faults, last heal at \(report.lastHealMs) ms, "
                + (report.convergedAtMs.map { "converged at \($0) ms" } ?? "never converged"),
        ]
        lines += extra
        for node in report.nodes {
            let converged = node.convergedAfterHealMs.map { "\($0) ms" } ?? "never"
            lines.append(
                "  \(node.name) (\(node.role), host \(node.host)): \(node.events) events, hash \(node.stateHash.prefix(12)), "
                    + "converged \(converged) after the heal, sent \(node.bytesSent) B, received \(node.bytesReceived) B, "
                    + "peak RSS \(node.peakRSSBytes / 1024) KiB")
        }
        for check in report.checks {
            lines.append("  check \(check.name): \(check.passed ? "passed" : "FAILED")")
            lines += check.details.prefix(20).map { "    \($0)" }
            if check.details.count > 20 { lines.append("    … \(check.details.count - 20) more in lab-report.json") }
        }
        lines.append(report.passed ? "every check passed" : "checks FAILED")
        return lines.joined(separator: "\n") + "\n"
    }
}
