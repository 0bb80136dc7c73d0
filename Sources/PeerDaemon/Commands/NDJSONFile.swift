import Foundation
import Replica

/// An NDJSON export file read line by line as bytes (`getline`), so that
/// memory does not grow with the file (docs/events.md).
enum NDJSONFile {
    /// Refuses anything but a regular file (a directory, a device, a pipe) before it is read.
    static func requireRegularFile(_ path: String) throws {
        var status = stat()
        guard stat(path, &status) == 0 else {
            throw CommandError("cannot read \(path): \(String(cString: strerror(errno)))")
        }
        guard status.st_mode & S_IFMT == S_IFREG else {
            throw CommandError(
                "cannot import \(path): it is \(ExportTarget.kind(of: status)); name an NDJSON file (docs/events.md)")
        }
    }

    /// Calls `event` with each event line's event and `proof` with each
    /// proof line's, with their line numbers; returns how many events there
    /// were. Throws at the first bad line, naming the file and line. A line
    /// in the shape `peerd export` writes is read without building a JSON
    /// tree (`EventJSON.event(fromLineBytes:)`); blank lines are skipped.
    @discardableResult
    static func forEachLine(
        in path: String, event: (Event, Int) throws -> Void, proof: (ExportProof, Int) throws -> Void = { _, _ in }
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
            var parsedEvent: Event?
            var parsedProof: ExportProof?
            do {
                if ExportProof.isProofLine(bytes) {
                    parsedProof = try ExportProof.parse(String(decoding: bytes, as: UTF8.self))
                } else {
                    parsedEvent = try EventJSON.event(fromLineBytes: bytes)
                }
            } catch {
                throw CommandError("\(path):\(number): \(error); nothing was imported")
            }
            if let parsedProof { try proof(parsedProof, number) }
            if let parsedEvent {
                events += 1
                try event(parsedEvent, number)
            }
        }
        return events
    }
}

/// Batches of parsed events passed from the thread that reads the file to
/// the one that ingests them. At most two wait, so memory stays at a few
/// batches however long the file.
///
/// `@unchecked Sendable`: its state is only touched with `condition` held.
final class BatchHandoff: @unchecked Sendable {
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
