import Foundation

/// The live progress on standard error. As text: one line rewritten in
/// place on a terminal, else a line every five seconds (a log stays
/// readable). As JSON (`--progress json`): one ``State`` object a line,
/// at most one a second, and `{"note":…}` for a message, for programs and
/// tests to follow the run without reading its words.
public final class ProgressLine {
    /// Where a run is: what the progress shows.
    public struct State: Codable, Sendable, Equatable {
        public var seed: UInt64
        /// `init`, `faults`, `settle`, `plant`, `checks`.
        public var phase: String
        /// Milliseconds since the first daemon started.
        public var atMs: Int64
        /// The kinds of the faults in force.
        public var faults: [String]
        /// Writes sent, and acknowledged, so far.
        public var writes: Int
        public var acknowledged: Int
        /// The events each node held at its last sample, by node name.
        public var events: [String: Int64]

        public init(
            seed: UInt64, phase: String, atMs: Int64, faults: [String], writes: Int, acknowledged: Int,
            events: [String: Int64]
        ) {
            self.seed = seed
            self.phase = phase
            self.atMs = atMs
            self.faults = faults
            self.writes = writes
            self.acknowledged = acknowledged
            self.events = events
        }

        /// `[lab seed 7] faults 12.5 s faults: kill,loss writes: 310 (287 acknowledged) events: n1=250 n2=-`.
        public var text: String {
            let shown = events.keys.sorted { ($0.count, $0) < ($1.count, $1) }.map { "\($0)=\(events[$0]!)" }
            return "[lab seed \(seed)] \(phase) \(String(format: "%.1f", Double(atMs) / 1000)) s"
                + " faults: \(faults.isEmpty ? "none" : faults.joined(separator: ","))"
                + " writes: \(writes) (\(acknowledged) acknowledged) events: " + shown.joined(separator: " ")
        }

        /// One line of `--progress json`, keys in snake case and sorted.
        public var json: String {
            let encoder = JSONEncoder()
            encoder.keyEncodingStrategy = .convertToSnakeCase
            encoder.outputFormatting = [.sortedKeys]
            return String(decoding: (try? encoder.encode(self)) ?? Data("{}".utf8), as: UTF8.self)
        }
    }

    private let json: Bool
    private let isTerminal = isatty(STDERR_FILENO) == 1
    private var lastPrinted = ContinuousClock.now - .seconds(10)
    private var shown = false

    /// Text, or with `json` one JSON object a line.
    public init(json: Bool = false) { self.json = json }

    /// Shows `state` as the current one.
    func update(_ state: State) {
        if json {
            guard ContinuousClock.now - lastPrinted >= .seconds(1) else { return }
            write(state.json + "\n")
            lastPrinted = ContinuousClock.now
        } else if isTerminal {
            write("\r" + state.text + "\u{1B}[K")
            shown = true
        } else if ContinuousClock.now - lastPrinted >= .seconds(5) {
            write(state.text + "\n")
            lastPrinted = ContinuousClock.now
        }
    }

    /// Ends the line, so that what follows starts on a line of its own.
    func finish() {
        if shown { write("\n") }
        shown = false
    }

    /// Prints `text` on a line of its own (as `{"note":"…"}` in JSON).
    public func say(_ text: String) {
        finish()
        guard json else { return write(text + "\n") }
        let line = (try? JSONSerialization.data(withJSONObject: ["note": text], options: [.sortedKeys])) ?? Data()
        write(String(decoding: line, as: UTF8.self) + "\n")
    }

    private func write(_ text: String) { FileHandle.standardError.write(Data(text.utf8)) }
}
