import Foundation
import Replica
import SyncProtocol

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
            let certificates = try directory.exportCertificates(log)
            if let file = arguments.positional.first {
                try ExportTarget.check(file, dataDirectory: directory.path)
                let count = try exportToFile(log, path: file, certificates: certificates)
                FileHandle.standardError.write(Data("exported \(count) events to \(file)\n".utf8))
            } else {
                var output = Output()
                try export(log, certificates: certificates) { lines in for line in lines { output.line(line) } }
                output.flush()
            }
        },
        Command(
            path: ["import"], usage: "import FILE",
            summary: """
                Reads NDJSON events (docs/events.md) through the same ingest path as sync. Idempotent. \
                The whole file is checked first, signatures too: a bad line, or a feed whose signed head \
                does not verify, is reported with its line number and nothing is imported.
                """
        ) { arguments, directory in
            let file = try arguments.positional("FILE")[0]
            let log = try directory.openLog()
            try importFile(file, into: log, directory: directory)
        },
    ]

    /// Writes to a temporary file beside `path` and renames it into place, so
    /// a failed export never leaves half a file under the real name.
    /// The export's lines, a page at a time, in one snapshot of the log:
    /// every event in arrival order, then the certificates and each feed's
    /// signed head (docs/events.md "Signed exports"). Returns the event count.
    @discardableResult
    private static func export(_ log: EventLog, certificates: [Certificate], _ write: ([String]) throws -> Void)
        throws -> Int
    {
        try log.snapshot { log in
            var count = 0
            try log.forEachEventPage { page in
                try write(page.map { EventJSON.line(for: $0) })
                count += page.count
            }
            let heads = try log.signedHeads().filter { $0.signature != nil }
            try write(
                certificates.map { ExportProof.certificate($0.bytes).line }
                    + heads.map { ExportProof.signedHead($0).line })
            return count
        }
    }

    private static func exportToFile(_ log: EventLog, path: String, certificates: [Certificate]) throws -> Int {
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
            count = try export(log, certificates: certificates) { lines in
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

    /// Events per `ingest` call: one transaction each, and large enough that
    /// the projection rows are written once per many batches (they are
    /// deferred from 256 events and written every 20,000; see
    /// `EventLog.Options.ProjectionWrites`). 10,000 events of ~300 bytes
    /// are a few MB, however long the file.
    static let importBatchSize = 10_000

    private static func importFile(_ path: String, into log: EventLog, directory: DataDirectory) throws {
        // Pass 1: every line must parse and every feed verify, as sync verifies, so nothing is
        // applied from a bad file. Only each feed's running link is kept, so memory does not grow with the file.
        try requireRegularFile(path)
        var verification = ImportVerification()
        let eventLines = try forEachEventLine(
            in: path, { event, line in verification.take(event, line: line) },
            proofs: { proof, line in try verification.take(proof, line: line) })
        let identity = try directory.identity(replicaID: log.replicaID)
        var keys = FeedKeys([log.replicaID: [identity.key.publicKey]])
        for bytes in try log.certificates() {
            if let certificate = try? Certificate(bytes: bytes) {
                keys.add(certificate.publicKey, for: certificate.replicaID)
            }
        }
        try verification.check(replicaID: log.replicaID, keys: keys, adminKey: identity.certificate?.adminKey)
        // Pass 2: a thread parses the file again into batches while this one ingests them.
        let batches = BatchHandoff()
        Thread.detachNewThread {
            do {
                var batch: [Event] = []
                batch.reserveCapacity(importBatchSize)
                try forEachEventLine(in: path) { event, _ in
                    batch.append(event)
                    if batch.count == importBatchSize {
                        try batches.put(batch)
                        batch.removeAll(keepingCapacity: true)
                    }
                }
                if !batch.isEmpty { try batches.put(batch) }
                batches.finish(nil)
            } catch {
                batches.finish(error)
            }
        }
        // Counts and problems only: keeping every stored event made memory grow with the file.
        var total = IngestReport()
        var storedCount = 0
        do {
            while let batch = try batches.take() {
                let report = try log.ingest(batch)
                storedCount += report.stored.count
                total.duplicates += report.duplicates
                total.forks += report.forks
                total.gaps += report.gaps
                total.invalid += report.invalid
            }
        } catch {
            batches.cancel()
            throw error
        }
        try log.writePendingProjections()
        // The verified heads are kept, so the imported events are served on with their proofs.
        try log.adoptSignedHeads(verification.heads.map(\.head))
        try log.storeCertificates(verification.certificates.map { ($0.replicaID, $0.bytes) })
        let problems = total.forks.map(\.description) + total.gaps.map(\.description) + total.invalid.map(\.description)
        for problem in problems { FileHandle.standardError.write(Data("peerd: warning: \(problem)\n".utf8)) }
        print(
            "imported \(storedCount) new events, \(total.duplicates) already held, from \(eventLines) lines of \(path)"
        )
        if !problems.isEmpty {
            throw CommandError("\(problems.count) problem(s) above; those events were not imported")
        }
    }

    /// Refuses anything but a regular file (a directory, a device, a pipe) before it is read.
    private static func requireRegularFile(_ path: String) throws {
        var status = stat()
        guard stat(path, &status) == 0 else {
            throw CommandError("cannot read \(path): \(String(cString: strerror(errno)))")
        }
        guard status.st_mode & S_IFMT == S_IFREG else {
            throw CommandError(
                "cannot import \(path): it is \(ExportTarget.kind(of: status)); name an NDJSON file (docs/events.md)")
        }
    }

    /// Calls `body` with each non-blank line's event in the file; returns how many
    /// events there were. Throws at the first bad line, naming the file and line. Lines
    /// are read as bytes, and a line in the shape `peerd export` writes is
    /// read without building a JSON tree (`EventJSON.event(fromLineBytes:)`).
    @discardableResult
    private static func forEachEventLine(
        in path: String,
        _ body: (Event, Int) throws -> Void, proofs: (ExportProof, Int) throws -> Void = { _, _ in }
    ) throws -> Int {
        guard let file = fopen(path, "r") else {
            throw CommandError("cannot read \(path): \(String(cString: strerror(errno)))")
        }
        defer { fclose(file) }
        var buffer: UnsafeMutablePointer<CChar>?
        var capacity = 0
        defer { free(buffer) }
        var number = 0
        var events = 0
        while case let length = getline(&buffer, &capacity, file), length >= 0, let buffer {
            number += 1
            let bytes = UnsafeBufferPointer(
                start: UnsafeRawPointer(buffer).assumingMemoryBound(to: UInt8.self), count: length)
            var event: Event?
            var proof: ExportProof?
            do {
                if ExportProof.isProofLine(bytes) {
                    proof = try ExportProof.parse(String(decoding: bytes, as: UTF8.self))
                } else {
                    event = try EventJSON.event(fromLineBytes: bytes)
                }
            } catch {
                throw CommandError("\(path):\(number): \(error); nothing was imported")
            }
            if let proof { try proofs(proof, number) }
            if let event {
                events += 1
                try body(event, number)
            }
        }
        return events
    }
}

/// Batches of parsed events passed from the thread that reads the file to
/// the one that ingests them. At most two wait, so memory stays at a few
/// batches however long the file.
private final class BatchHandoff: @unchecked Sendable {
    // Every stored property is guarded by `condition`.
    private let condition = NSCondition()
    private var waiting: [[Event]] = []
    private var finished = false
    private var failure: (any Error)?
    private var cancelled = false

    /// The ingesting side gave up: the reader stops.
    struct Cancelled: Error {}

    /// Waits for room, then hands `batch` on; throws when the ingesting side gave up.
    func put(_ batch: [Event]) throws {
        condition.lock()
        defer { condition.unlock() }
        while waiting.count >= 2 && !cancelled { condition.wait() }
        if cancelled { throw Cancelled() }
        waiting.append(batch)
        condition.broadcast()
    }

    /// No more batches: the file was read to its end, or reading it failed with `error`.
    func finish(_ error: (any Error)?) {
        condition.lock()
        defer { condition.unlock() }
        finished = true
        failure = error
        condition.broadcast()
    }

    /// The next batch; nil after the last one; throws what stopped the reader.
    func take() throws -> [Event]? {
        condition.lock()
        defer { condition.unlock() }
        while waiting.isEmpty && !finished { condition.wait() }
        if !waiting.isEmpty {
            condition.broadcast()
            return waiting.removeFirst()
        }
        if let failure { throw failure }
        return nil
    }

    /// The ingesting side stopped: the reader stops at its next batch.
    func cancel() {
        condition.lock()
        defer { condition.unlock() }
        cancelled = true
        condition.broadcast()
    }
}
