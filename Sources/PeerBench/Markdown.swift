import Foundation

/// A Markdown table: a header row, then rows whose first cell says what the figures are.
struct MarkdownTable {
    private let header: [String]
    private let leftAligned: Int
    private var rows: [[String]] = []

    /// A table with these column titles; the first `leftAligned` columns are text, the rest figures.
    init(_ header: [String], leftAligned: Int = 1) {
        self.header = header
        self.leftAligned = leftAligned
    }

    /// Adds a row; missing cells stay empty.
    mutating func row(_ cells: String...) { row(cells) }

    mutating func row(_ cells: [String]) {
        rows.append(cells + Array(repeating: "", count: max(0, header.count - cells.count)))
    }

    /// The table's lines; figure columns are right-aligned.
    var lines: [String] {
        func line(_ cells: [String]) -> String {
            "| " + cells.map { $0.replacingOccurrences(of: "|", with: "\\|") }.joined(separator: " | ") + " |"
        }
        let rule =
            "|" + String(repeating: "---|", count: min(leftAligned, header.count))
            + String(repeating: "---:|", count: max(0, header.count - leftAligned))
        return [line(header), rule] + rows.map(line)
    }
}

extension MarkdownTable {
    /// A table of `what | events/s | seconds | vs raw SQLite` (then `extra` columns): each row's
    /// rate over `events`, and its time against `raw` seconds.
    static func rates(
        _ what: String, events: Int, raw: Double, extra: [String] = [],
        _ rows: [(name: String, seconds: Double, extra: [String])]
    ) -> MarkdownTable {
        var table = MarkdownTable([what, "events/s", "seconds", "vs raw SQLite"] + extra)
        for row in rows {
            table.row(
                [
                    row.name, Report.grouped(Double(events) / row.seconds), Figure.fixed(row.seconds, 2),
                    Report.ratio(raw / row.seconds),
                ] + row.extra)
        }
        return table
    }
}

/// The parts every report shares.
enum Markdown {
    /// The time now, e.g. `2026-12-03T18:30:00Z`.
    static var now: String {
        Date().formatted(.iso8601.year().month().day().time(includingFractionalSeconds: false)) + "Z"
    }

    /// `## peerd-bench TITLE, run NOW`, then the machine and `notes` as a list.
    static func heading(_ title: String, _ notes: [String] = []) -> [String] {
        ["## peerd-bench \(title), run \(now)", "", "- machine: \(Report.machine)"] + notes.map { "- " + $0 } + [""]
    }

    /// `- command: ...` as run.
    static var command: String {
        "- command: `\((["peerd-bench"] + CommandLine.arguments.dropFirst()).joined(separator: " "))`"
    }

    /// Prints a section and flushes standard output, so a later failure keeps it.
    static func emit(_ lines: [String]) {
        print(lines.joined(separator: "\n") + "\n")
        fflush(nil)
    }
}

/// How the reports write their figures.
enum Figure {
    /// `12.35` with `digits` decimals, `—` when not finite.
    static func fixed(_ value: Double, _ digits: Int) -> String {
        value.isFinite ? String(format: "%.\(digits)f", value) : "—"
    }

    /// `1.23`: seconds as milliseconds, 2 decimals.
    static func milli(_ seconds: Double) -> String { fixed(seconds * 1000, 2) }

    /// `123`: seconds as whole microseconds.
    static func micro(_ seconds: Double) -> String { fixed(seconds * 1e6, 0) }

    /// `0.0012×`: ratios that may be far below 1.
    static func smallRatio(_ value: Double) -> String {
        value >= 0.01 ? Report.ratio(value) : String(format: "%.4f×", value)
    }

    /// `12.34`: seconds as milliseconds.
    static func ms(_ seconds: Double) -> String { Figure.fixed(seconds * 1000, seconds < 0.1 ? 2 : 1) }

    /// `1.9 / 4.2 / 7.0`: p50 / p99 / max of live samples in ms, `—` without samples.
    static func latency(_ summary: LatencySummary) -> String {
        guard summary.count > 0 else { return "—" }
        return "\(ms(summary.p50)) / \(ms(summary.p99)) / \(ms(summary.max))"
    }

    /// `12,345`, `—` for nil.
    static func count(_ value: Int?) -> String { value.map { Report.grouped(Double($0)) } ?? "—" }

    /// `123` MiB figures, `—` when unknown.
    static func mib(_ value: Double) -> String { Figure.fixed(value, 0) }

    /// `1.5` seconds, or `text` for nil.
    static func seconds(_ value: Double?, digits: Int = 1, otherwise text: String = "—") -> String {
        value.map { Figure.fixed($0, digits) } ?? text
    }

    /// `2.05 MB` for a byte count.
    static func bytes(_ value: Int) -> String {
        if value >= 1_000_000 { return Figure.fixed(Double(value) / 1e6, 2) + " MB" }
        if value >= 1_000 { return Figure.fixed(Double(value) / 1e3, 1) + " kB" }
        return "\(value) B"
    }

    /// `p50 1.2 / p90 3.0 / max 9.9 s` of ascending seconds, or `never` text when empty.
    static func distribution(_ sorted: [Double], never: String) -> String {
        guard !sorted.isEmpty else { return never }
        let p50 = LatencySummary.percentile(0.5, of: sorted)
        let p90 = LatencySummary.percentile(0.9, of: sorted)
        return "p50 \(Figure.fixed(p50, 2)) / p90 \(Figure.fixed(p90, 2)) / max "
            + "\(Figure.fixed(sorted.last ?? 0, 2)) s"
    }

    /// `98 of 100` delivered, with the failures spelled out.
    static func delivered(_ samples: LiveSamples) -> String {
        "\(samples.latencies.count) of \(samples.attempted)"
    }

    /// `0`, or `3 (2 writes timed out, 1 not received)`.
    static func failures(_ samples: LiveSamples) -> String {
        guard samples.failures > 0 else { return "0" }
        var parts: [String] = []
        if samples.writeFailures > 0 {
            parts.append("\(samples.writeFailures) writes failed (\(samples.writeTimeouts) timed out)")
        }
        if samples.notReceived > 0 { parts.append("\(samples.notReceived) not received within 10 s") }
        return "\(samples.failures): " + parts.joined(separator: ", ")
    }

    /// A log line shortened for a table cell.
    static func logLine(_ line: Substring?) -> String {
        guard let line else { return "—" }
        return "`" + String(line.prefix(200)).replacingOccurrences(of: "`", with: "'") + "`"
    }
}
