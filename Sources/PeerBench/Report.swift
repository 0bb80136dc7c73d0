import Foundation

/// Everything one run measured, printed as Markdown.
struct Report {
    /// The throughput rows of every size, raw baselines first.
    var results: [PhaseResult]
    /// RSS samples while the recent-hot append log grew.
    var growth: [MemoryCheckpoint]
    /// The single-event commit latencies.
    var latency: LatencyResult
    /// Mean payload bytes of the workload.
    var meanPayloadBytes: Double
    /// Whether each phase's peak RSS was reset before it began.
    var peakResets: Bool

    /// The whole report.
    var markdown: String {
        let heading = [
            "## peerd-bench results", "", Markdown.command,
            "- machine: \(Report.machine), SQLite \(RawEventTable.sqliteVersion)",
            "- workload: item events, mean payload \(Figure.fixed(meanPayloadBytes, 1)) bytes; "
                + "1 MB = 10^6 bytes; rates count only the timed write (or read) calls",
            "- CPU µs/event: process CPU time (user + system) in the timed calls per event; "
                + "steadier than the rates when the machine is shared",
            "- disk written: `write_bytes` of /proc/self/io over the row (WAL, database and checkpoints); "
                + "write amp. = disk written / payload bytes",
            "- memory: peak = VmHWM "
                + (peakResets ? "since the start of the row (reset through /proc/self/clear_refs)" : "since start")
                + ", RSS = VmRSS at the end of the row",
        ]
        let sections = [
            ("Rates and memory", throughputTable(results.filter { !$0.isAnalysis })),
            ("Where the time goes (analysis rows, same run)", throughputTable(results.filter(\.isAnalysis))),
            ("Single-event durable commits", latencyTable),
            ("Memory while the log grows", growthTable),
        ]
        return (heading + sections.flatMap { ["", "### \($0.0)", ""] + $0.1 }).joined(separator: "\n")
    }

    /// One table of rate rows; every ratio divides by a baseline of the same size.
    private func throughputTable(_ rows: [PhaseResult]) -> [String] {
        var lines = [
            "| Row | Events | Time (s) | Events/s | vs raw | vs raw, same indexes | Payload MB/s | CPU µs/event "
                + "| Disk written (MB) | Write amp. | Peak RSS (MiB) | RSS after (MiB) | Notes |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
        ]
        for (index, row) in rows.enumerated() {
            let sameSize = results.filter { $0.size == row.size }
            let bare = sameSize.first { $0.name == SizeBenchmark.rawBareName }?.eventsPerSecond ?? 0
            let indexed = sameSize.first { $0.name == SizeBenchmark.rawIndexedName }?.eventsPerSecond ?? 0
            let compare = row.comparesWithRaw && bare > 0
            if index > 0 && rows[index - 1].size != row.size {
                lines.append("| | | | | | | | | | | | | |")
            }
            lines.append(
                "| \(row.name) | \(Report.grouped(Double(row.events))) | \(String(format: "%.2f", row.seconds)) | "
                    + "\(Report.grouped(row.eventsPerSecond)) | "
                    + "\(compare ? Report.ratio(row.eventsPerSecond / bare) : "—") | "
                    + "\(compare && indexed > 0 ? Report.ratio(row.eventsPerSecond / indexed) : "—") | "
                    + "\(String(format: "%.2f", row.payloadMBPerSecond)) | "
                    + "\(String(format: "%.1f", row.cpuMicrosecondsPerEvent)) | "
                    + "\(row.diskWrittenBytes.map { String(format: "%.0f", Double($0) / 1e6) } ?? "—") | "
                    + "\(row.writeAmplification.map { String(format: "%.0f×", $0) } ?? "—") | "
                    + "\(String(format: "%.0f", row.peakMiB)) | "
                    + "\(String(format: "%.0f", row.endMiB)) | \(row.note) |")
        }
        return lines
    }

    private var latencyTable: [String] {
        func row(_ name: String, _ summary: LatencySummary, _ ratio: String) -> String {
            "| \(name) | \(Report.grouped(Double(summary.count))) | \(String(format: "%.2f", summary.p50 * 1000)) | "
                + "\(String(format: "%.2f", summary.p99 * 1000)) | \(Report.grouped(summary.ratePerSecond)) | \(ratio) |"
        }
        return [
            "| Single durable commit (synchronous=FULL, one event per transaction) | Samples | p50 (ms) | p99 (ms) | Commits/s | vs raw |",
            "|---|---:|---:|---:|---:|---:|",
            row("raw SQLite single-row commit", latency.raw, "1.00×"),
            row(
                "EventLog.append(NewEvent)", latency.library,
                Report.ratio(latency.library.ratePerSecond / max(latency.raw.ratePerSecond, 1e-9))),
        ]
    }

    private var growthTable: [String] {
        var lines = [
            "| Append log (recent items hot) | Events in log | RSS (MiB) | of which SQLite heap (MiB) "
                + "| of which file/shm-mapped (MiB) | Peak so far (MiB) | Database file (MB) | WAL file (MB) |",
            "|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        func mib(_ value: Double) -> String { String(format: "%.0f", value) }
        for sample in growth {
            lines.append(
                "| run of \(Report.grouped(Double(sample.size))) | \(Report.grouped(Double(sample.events))) | "
                    + "\(mib(sample.residentMiB)) | \(mib(sample.sqliteHeapMiB)) | \(mib(sample.fileBackedMiB)) | "
                    + "\(mib(sample.peakMiB)) | \(mib(Double(sample.databaseBytes) / 1e6)) | "
                    + "\(mib(Double(sample.walBytes) / 1e6)) |")
        }
        return lines
    }

    /// `12,345` for 12345.4.
    static func grouped(_ value: Double) -> String {
        guard value.isFinite else { return "—" }
        let digits = String(Int(value.rounded()))
        var result = ""
        for (index, character) in digits.reversed().enumerated() {
            if index > 0 && index % 3 == 0 && character != "-" { result.append(",") }
            result.append(character)
        }
        return String(result.reversed())
    }

    /// `0.48×`.
    static func ratio(_ value: Double) -> String { String(format: "%.2f×", value) }

    /// Cores and OS, e.g. `2 cores, Debian GNU/Linux 12 (bookworm)`.
    static var machine: String {
        let cores = ProcessInfo.processInfo.activeProcessorCount
        let release = (try? String(contentsOfFile: "/etc/os-release", encoding: .utf8)) ?? ""
        let pretty = release.split(separator: "\n").first { $0.hasPrefix("PRETTY_NAME=") }
            .map { $0.dropFirst("PRETTY_NAME=".count).trimmingCharacters(in: CharacterSet(charactersIn: "\"")) }
        return "\(cores) cores (nproc), \(pretty ?? ProcessInfo.processInfo.operatingSystemVersionString)"
    }
}
