import Foundation

/// The pushes of `peerd-bench thin` timed in windows: `window` events
/// pushed from the moment the daemon holds `at` thin-client events, for
/// each size in `starts`, so that the push rate at 10,000 and at 200,000
/// stored events come from one run (docs/performance.md "Thin-client
/// pushes as the index grows"). The raw baseline is timed over the same
/// windows of its own inserts.
struct ThinPushGrowth {
    /// One timed window.
    struct Window {
        /// Events stored before its first push.
        var start: Int
        /// Events pushed in it.
        var events = 0
        var seconds: Double = 0
        /// The daemon's CPU (user + system) and disk writes over the window.
        var daemonCPUSeconds: Double = .nan
        var diskWrittenBytes: Int64?
        /// The raw baselines over the same rows: integer primary key only, and with an index on the random ids.
        var rawSeconds: Double = 0
        var rawIndexedSeconds: Double = 0
    }

    let window: Int
    private(set) var windows: [Window]

    /// Windows of `window` events from each of `starts` (sorted, overlaps dropped).
    init(starts: [Int], window: Int) {
        self.window = window
        var kept: [Window] = []
        for start in starts.sorted() where kept.last.map({ start >= $0.start + window }) ?? true {
            kept.append(Window(start: start))
        }
        windows = kept
    }

    /// Events a run must push so that every window is full.
    var eventsNeeded: Int { (windows.last?.start ?? 0) + (windows.isEmpty ? 0 : window) }

    /// The window the batch whose first event lands at `stored` falls in, if any.
    func windowIndex(stored: Int) -> Int? {
        windows.firstIndex { stored >= $0.start && stored < $0.start + window }
    }

    mutating func add(push seconds: Double, events: Int, stored: Int) {
        guard let index = windowIndex(stored: stored) else { return }
        windows[index].seconds += seconds
        windows[index].events += events
    }

    mutating func add(raw seconds: Double, indexed: Bool, stored: Int) {
        guard let index = windowIndex(stored: stored) else { return }
        if indexed {
            windows[index].rawIndexedSeconds += seconds
        } else {
            windows[index].rawSeconds += seconds
        }
    }

    /// Notes the daemon's figures at a window's first push (`before`) and after its last.
    mutating func note(daemon stats: ChildStats, stored: Int, before: ChildStats?) {
        guard let index = windowIndex(stored: stored), let before else { return }
        windows[index].daemonCPUSeconds = stats.cpuSeconds - before.cpuSeconds
        if let after = stats.diskWrittenBytes, let start = before.diskWrittenBytes {
            windows[index].diskWrittenBytes = after - start
        }
    }

    /// The report's table, then the ratio of the last window's push rate to the first's.
    var lines: [String] {
        var table = MarkdownTable([
            "thin-client events stored", "push events/s", "vs raw SQLite", "daemon CPU µs/event",
            "daemon disk writes KB/event", "raw SQLite rows/s", "raw SQLite + random-id index, rows/s",
        ])
        for window in windows where window.events > 0 {
            let events = Double(window.events)
            table.row(
                Report.grouped(Double(window.start)), Report.grouped(events / window.seconds),
                Report.ratio(window.rawSeconds / window.seconds),
                Figure.fixed(window.daemonCPUSeconds / events * 1e6, 1),
                window.diskWrittenBytes.map { Figure.fixed(Double($0) / events / 1000, 2) } ?? "—",
                Report.grouped(events / window.rawSeconds), Report.grouped(events / window.rawIndexedSeconds))
        }
        var lines = table.lines
        let measured = windows.filter { $0.events > 0 }
        if let first = measured.first, let last = measured.last, measured.count > 1 {
            func rate(_ window: Window, _ seconds: Double) -> Double { Double(window.events) / seconds }
            lines += [
                "",
                "- push rate at \(Report.grouped(Double(last.start))) stored / at "
                    + "\(Report.grouped(Double(first.start))): "
                    + "**\(Report.ratio(rate(last, last.seconds) / rate(first, first.seconds)))** "
                    + "(raw SQLite \(Report.ratio(rate(last, last.rawSeconds) / rate(first, first.rawSeconds))), "
                    + "raw SQLite + random-id index "
                    + "\(Report.ratio(rate(last, last.rawIndexedSeconds) / rate(first, first.rawIndexedSeconds))))",
            ]
        }
        return lines
    }
}
