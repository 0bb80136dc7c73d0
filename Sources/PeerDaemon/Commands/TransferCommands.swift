import Foundation
import Replica

/// `peerd export` and `peerd import`: NDJSON files, one event per line, so a
/// USB stick between two devices is a valid sync.
enum TransferCommands {
    static let all: [Command] = [
        Command(
            path: ["export"], usage: "export [FILE]",
            summary: "Writes every event as NDJSON (docs/events.md) to FILE, or to standard output."
        ) { arguments, directory in
            guard arguments.positional.count <= 1 else { throw UsageError("export takes at most one FILE") }
            let log = try directory.openLog()
            if let file = arguments.positional.first {
                let count = try exportToFile(log, path: file)
                FileHandle.standardError.write(Data("exported \(count) events to \(file)\n".utf8))
            } else {
                var output = Output()
                try log.forEachEventPage { page in for stored in page { output.line(EventJSON.line(for: stored)) } }
                output.flush()
            }
        },
        Command(
            path: ["import"], usage: "import FILE",
            summary: """
                Reads NDJSON events (docs/events.md) through the same ingest path as sync. Idempotent. \
                The whole file is checked first: a bad line is reported with its number and nothing is imported.
                """
        ) { arguments, directory in
            let file = try arguments.positional("FILE")[0]
            let log = try directory.openLog()
            try importFile(file, into: log)
        },
    ]

    /// Writes to a temporary file beside `path` and renames it into place, so
    /// a failed export never leaves half a file under the real name.
    private static func exportToFile(_ log: EventLog, path: String) throws -> Int {
        let temporary = path + ".partial"
        guard FileManager.default.createFile(atPath: temporary, contents: nil),
            let handle = FileHandle(forWritingAtPath: temporary)
        else { throw CommandError("cannot write \(path)") }
        var count = 0
        do {
            try log.forEachEventPage { page in
                let text = page.map { EventJSON.line(for: $0) + "\n" }.joined()
                try handle.write(contentsOf: Data(text.utf8))
                count += page.count
            }
            try handle.synchronize()
            try handle.close()
            if FileManager.default.fileExists(atPath: path) { try FileManager.default.removeItem(atPath: path) }
            try FileManager.default.moveItem(atPath: temporary, toPath: path)
        } catch {
            try? handle.close()
            try? FileManager.default.removeItem(atPath: temporary)
            throw CommandError("cannot write \(path): \(error)")
        }
        return count
    }

    private static func importFile(_ path: String, into log: EventLog) throws {
        // Pass 1: every line must parse, so nothing is applied from a bad file.
        var lines = 0
        try forEachEventLine(in: path) { _, _ in lines += 1 }
        // Pass 2: ingest in batches.
        var batch: [Event] = []
        // Counts and problems only: keeping every stored event made memory grow with the file.
        var total = IngestReport()
        var storedCount = 0
        func flush() throws {
            let report = try log.ingest(batch)
            storedCount += report.stored.count
            total.duplicates += report.duplicates
            total.forks += report.forks
            total.gaps += report.gaps
            total.invalid += report.invalid
            batch.removeAll(keepingCapacity: true)
        }
        try forEachEventLine(in: path) { event, _ in
            batch.append(event)
            if batch.count == 1000 { try flush() }
        }
        try flush()
        try log.writePendingProjections()
        let problems = total.forks.map(\.description) + total.gaps.map(\.description) + total.invalid.map(\.description)
        for problem in problems { FileHandle.standardError.write(Data("peerd: warning: \(problem)\n".utf8)) }
        print(
            "imported \(storedCount) new events, \(total.duplicates) already held, from \(lines) lines of \(path)"
        )
        if !problems.isEmpty {
            throw CommandError("\(problems.count) problem(s) above; those events were not imported")
        }
    }

    /// Calls `body` with each non-empty line's event and line number; throws
    /// at the first bad line, naming it.
    private static func forEachEventLine(in path: String, _ body: (Event, Int) throws -> Void) throws {
        guard let file = fopen(path, "r") else {
            throw CommandError("cannot read \(path): \(String(cString: strerror(errno)))")
        }
        defer { fclose(file) }
        var buffer: UnsafeMutablePointer<CChar>?
        var capacity = 0
        defer { free(buffer) }
        var number = 0
        while getline(&buffer, &capacity, file) >= 0, let buffer {
            number += 1
            let line = String(cString: buffer).trimmingCharacters(in: .whitespacesAndNewlines)
            if line.isEmpty { continue }
            let event: Event
            do {
                event = try EventJSON.event(fromLine: line)
            } catch {
                throw CommandError("\(path):\(number): \(error); nothing was imported")
            }
            try body(event, number)
        }
    }
}
