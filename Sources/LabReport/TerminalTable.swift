/// The table `peerd-lab` prints at the end of a run: one row per node,
/// the checks (failed ones with their details), the verdict, and the seed
/// with the command that replays the run.
///
/// ```swift
/// print(TerminalTable(report, colour: isatty(STDOUT_FILENO) == 1).text, terminator: "")
/// ```
///
/// ```text
/// node  role  events  cursor           hash      converged     sent  received  peak RSS
/// n1    peer     185  Σ185 in 5 feeds  5f1c0a9e    +380 ms  244 KiB   146 KiB  30.0 MiB
/// n2    peer     185  Σ185 in 5 feeds  5f1c0a9e    +477 ms  252 KiB   160 KiB  31.1 MiB
/// …
///
/// checks
///   ✔ same vector cursor and state hash on every node
///   ✘ projections equal an independent fold
///       n3: item-7 quantity 4 in its projection, 5 in the fold of the union of all nodes' events
///
/// NOT converged: 1 check failed
/// seed 42  replay: peerd-lab --nodes 5 --duration 60s --seed 42 --faults partition,loss,kill
/// ```
public struct TerminalTable: Sendable {
    /// The report it shows.
    public let report: LabReport
    /// Whether ✔, ✘ and the verdict are coloured with ANSI escapes (only when asked: a terminal, no `NO_COLOR`).
    public let colour: Bool

    /// The table of `report`, in plain text unless `colour`.
    public init(_ report: LabReport, colour: Bool = false) {
        self.report = report
        self.colour = colour
    }

    /// The lines, without line ends.
    public var lines: [String] {
        var lines = nodeRows
        if let conflicts = report.conflicts {
            lines.append("")
            lines.append("conflicts: " + conflicts.summary)
        }
        for (kind, reason) in (report.configuration.unavailable ?? [:]).sorted(by: { $0.key < $1.key }) {
            lines.append("left out: \(kind): \(reason)")
        }
        lines.append("")
        lines.append("checks")
        for check in report.checks {
            lines.append("  " + paint(check.passed ? "✔" : "✘", check.passed ? .green : .red) + " " + check.name)
            if !check.passed { lines += check.details.map { "      " + $0 } }
        }
        if report.checks.isEmpty { lines.append("  (none ran)") }
        lines.append("")
        lines.append(paint(report.verdict, report.passed ? .boldGreen : .boldRed))
        lines.append("seed \(report.configuration.seed)  replay: \(report.replayCommand)")
        return lines
    }

    /// The whole table, each line ended with a newline.
    public var text: String { lines.map { $0 + "\n" }.joined() }

    private var nodeRows: [String] {
        var columns = TextColumns([.left, .left, .right, .left, .left, .right, .right, .right, .right])
        columns.append(["node", "role", "events", "cursor", "hash", "converged", "sent", "received", "peak RSS"])
        for node in report.nodes {
            columns.append([
                node.name, node.role, Units.count(node.events), node.cursorSummary, node.shortStateHash,
                node.convergedAfterHeal, Units.bytes(node.bytesSent), Units.bytes(node.bytesReceived),
                Units.mebibytes(node.peakRSSBytes),
            ])
        }
        return columns.lines
    }

    private enum Paint: String {
        case green = "32"
        case red = "31"
        case boldGreen = "1;32"
        case boldRed = "1;31"
    }

    private func paint(_ text: String, _ paint: Paint) -> String {
        colour ? "\u{1B}[\(paint.rawValue)m\(text)\u{1B}[0m" : text
    }
}
