import Foundation

/// The HTML report of a run (`DIR/lab-report.html`): one self-contained
/// file, no scripts, fonts or images from elsewhere. A header with the
/// verdict and the run's configuration, the SVG timeline with its legend,
/// the per-node table and the checks. Every text that comes from the
/// report is escaped.
///
/// ```swift
/// try HTMLReport(report).html.write(to: directory.appendingPathComponent("lab-report.html"), atomically: true, encoding: .utf8)
/// ```
public struct HTMLReport: Sendable {
    /// The report it shows.
    public let report: LabReport

    /// The HTML report of `report`.
    public init(_ report: LabReport) { self.report = report }

    /// The whole document.
    public var html: String {
        let seed = report.configuration.seed
        return """
            <!DOCTYPE html>
            <html lang="en">
            <head>
            <meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <title>peerd-lab · seed \(seed) · \(report.passed ? "converged" : "NOT converged")</title>
            <style>
            \(Self.style)</style>
            </head>
            <body>
            <main>
            \(header)\(timeline)\(nodeTable)\(checkList)<footer>Written by <code>peerd-lab</code> from \
            <code>lab-report.json</code>; times are since the lab started its first daemon.</footer>
            </main>
            </body>
            </html>

            """
    }

    private var header: String {
        let configuration = report.configuration
        let verdictClass = report.passed ? "pass" : "fail"
        let headline = report.passed ? "✔ Converged" : "✘ NOT converged"
        let convergence =
            report.convergedAtMs.map {
                "all nodes converged \(Units.duration($0 - report.lastHealMs)) after the last heal"
            }
            ?? "the nodes never converged after the last heal"
        let converged = report.convergedAtMs.map { "\(Units.clock($0)) (+\(Units.duration($0 - report.lastHealMs)))" }
        // Four columns, the short facts first, the faults (the longest) last.
        var facts: [(String, String)] = [
            ("seed", "\(configuration.seed)"),
            ("nodes", "\(configuration.nodes)"),
            ("relays", "\(configuration.relays)"),
            ("duration", "\(Units.duration(configuration.durationMs)) asked, \(Units.duration(report.elapsedMs)) run"),
            ("started", Self.utc(report.startedAtMs)),
            ("writes", "\(Units.count(report.writes.count)), \(Units.count(report.acknowledgedWrites)) acknowledged"),
            ("last heal → converged", "\(Units.clock(report.lastHealMs)) → \(converged ?? "never")"),
            ("faults", "\(report.faults.count) (\(FaultPalette.kinds(in: report.faults).joined(separator: ", ")))"),
        ]
        if let rate = configuration.rate { facts.insert(("rate asked", "\(rate) writes/s"), at: 6) }
        if let conflicts = report.conflicts { facts.append(("conflicts", conflicts.summary)) }
        for (kind, reason) in (configuration.unavailable ?? [:]).sorted(by: { $0.key < $1.key }) {
            facts.append(("left out: \(kind)", reason))
        }
        let items = facts.map { "<div><dt>\($0.0)</dt><dd>\($0.1.htmlEscaped)</dd></div>" }.joined()
        return """
            <header>
            <h1>peerd-lab <span class="seed">seed \(configuration.seed)</span></h1>
            <section class="verdict \(verdictClass)"><p class="headline">\(headline)</p>\
            <p>\(report.verdict.htmlEscaped) · \(convergence)</p></section>
            <dl class="facts">\(items)</dl>
            <p class="replay">replay: <code>\(report.replayCommand.htmlEscaped)</code></p>
            </header>

            """
    }

    private var timeline: String {
        """
        <section class="card">
        <h2>Timeline</h2>
        \(legend)<div class="scroll">
        \(Timeline(report).svg)</div>
        </section>

        """
    }

    /// A moment as a date and time in UTC, to the second: `2026-12-01 12:00:00 UTC`.
    static func utc(_ millisecondsSince1970: Int64) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withFullDate, .withFullTime, .withSpaceBetweenDateAndTime]
        formatter.timeZone = TimeZone(identifier: "UTC")
        let text = formatter.string(from: Date(timeIntervalSince1970: Double(millisecondsSince1970) / 1000))
        return text.replacingOccurrences(of: "Z", with: "") + " UTC"
    }
}
