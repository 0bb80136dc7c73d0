import Foundation
import Replica
import SyncProtocol

/// `peerd export [FILE] [--since FILE]`: every event as NDJSON, or with
/// `--since` only what another replica lacks, with what a receiver needs
/// to verify them as sync does (docs/events.md "Signed exports").
enum ExportCommand {
    static let command = Command(
        path: ["export"], usage: "export [FILE] [--since STATUS_OR_EXPORT]",
        summary: """
            Writes every event as NDJSON (docs/events.md) to FILE, or to standard output, with the certificates \
            and signed heads that verify them. With --since, only the events a replica lacks: the file names \
            what that replica's `peerd status` printed (text or --json) or an export it imported before; each \
            feed then continues from that replica's seq (a `base` line), and an import refuses the file where \
            the replica does not hold that base.
            """,
        options: ["since"]
    ) { arguments, directory in
        guard arguments.positional.count <= 1 else { throw UsageError("export takes at most one FILE") }
        let since = try arguments.options["since"].map { try ExportSince.cursor(from: $0) }
        let log = try directory.openLog()
        let writer = ExportWriter(certificates: try directory.exportCertificates(log), since: since)
        if let file = arguments.positional.first {
            try ExportTarget.check(file, dataDirectory: directory.path)
            let count = try writer.write(log, toFile: file)
            let what = since == nil ? "" : " not held at the cursor of \(arguments.options["since"]!)"
            FileHandle.standardError.write(Data("exported \(count) events\(what) to \(file)\n".utf8))
        } else {
            var output = Output()
            try writer.write(log) { lines in for line in lines { output.line(line) } }
            output.flush()
        }
    }
}

/// The lines of one export, in one snapshot of the log: the events (all of
/// them in arrival order, or with `since` each feed's events past that
/// cursor, feed by feed after its `base` line), then the certificates and
/// each exported feed's signed head (docs/events.md "Signed exports"). A
/// full export keeps the layout that builds before incremental exports import.
struct ExportWriter {
    let certificates: [Certificate]
    /// The cursor of the replica the export is for; `nil`: everything.
    let since: VectorCursor?

    /// Events per read of a feed in an incremental export.
    static let pageSize = 10_000

    /// Writes the export a page of lines at a time; returns the event count.
    @discardableResult
    func write(_ log: EventLog, _ output: ([String]) throws -> Void) throws -> Int {
        try log.snapshot { log in
            var count = 0
            var heads = try log.signedHeads().filter { $0.signature != nil }
            if let since {
                let cursor = try log.cursor()
                heads.removeAll { $0.seq <= since[$0.feed] }
                for feed in cursor.feeds where cursor[feed] > since[feed] {
                    let start = since[feed]
                    if start > 0 { try output([ExportProof.base(try log.chainHead(of: feed, at: start)).line]) }
                    var next = start + 1
                    while next <= cursor[feed] {
                        let page = try log.events(in: feed, seqs: next...cursor[feed], limit: Self.pageSize)
                        guard let last = page.last else { break }
                        try output(page.map { EventJSON.line(for: $0) })
                        count += page.count
                        next = last.event.seq + 1
                    }
                }
            } else {
                try log.forEachEventPage { page in
                    try output(page.map { EventJSON.line(for: $0) })
                    count += page.count
                }
            }
            try output(
                certificates.map { ExportProof.certificate($0.bytes).line }
                    + heads.map { ExportProof.signedHead($0).line })
            return count
        }
    }

    /// Writes to a temporary file beside `path` and renames it into place, so
    /// a failed export never leaves half a file under the real name.
    func write(_ log: EventLog, toFile path: String) throws -> Int {
        let temporary = path + ".partial"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw CommandError("cannot write \(path): \(String(cString: strerror(errno)))") }
        let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
        var count = 0
        // A failure of the file itself; a failure to read the log keeps its own words.
        func writing(_ body: () throws -> Void) throws {
            do { try body() } catch { throw CommandError("cannot write \(path): \(error)") }
        }
        do {
            count = try write(log) { lines in
                try writing { try handle.write(contentsOf: Data(lines.map { $0 + "\n" }.joined().utf8)) }
            }
            try writing {
                try handle.synchronize()
                try handle.close()
            }
            // rename(2) replaces a file under `path` in one step: there is never no file, nor half of one.
            guard rename(temporary, path) == 0 else {
                throw CommandError("cannot rename \(temporary) to \(path): \(String(cString: strerror(errno)))")
            }
        } catch {
            try? handle.close()
            try? FileManager.default.removeItem(atPath: temporary)
            throw error
        }
        return count
    }
}
