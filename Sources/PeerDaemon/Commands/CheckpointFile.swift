import Foundation
import Replica
import SyncProtocol

/// A checkpoint on disk, as `peerd checkpoint export` writes it and
/// `peerd checkpoint start` reads it (docs/protocol.md "Checkpoint files"):
/// "PSCF", format 1, the signed statement (u32 big-endian length and its
/// bytes), then every entity base (`EntityBase.encode`) in `(type, id)`
/// order to the end of the file.
enum CheckpointFile {
    static let magic: [UInt8] = Array("PSCF".utf8)
    static let format: UInt8 = 1
    /// Bases read from the log per page while writing.
    static let pageSize = 2_000

    /// Writes the checkpoint `log` folds from, and its bases; returns the bytes written.
    static func write(from log: EventLog, held: HeldCheckpoint, to path: String) throws -> Int {
        guard FileManager.default.createFile(atPath: path, contents: nil) else {
            throw CommandError("cannot create \(path)")
        }
        let file = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        defer { try? file.close() }
        var header = magic + [format]
        withUnsafeBytes(of: UInt32(held.statement.count).bigEndian) { header += $0 }
        try file.write(contentsOf: header + held.statement)
        var written = header.count + held.statement.count
        var pages = log.checkpointBasePages(pageSize: pageSize)
        while let page = try pages.next() {
            var bytes: [UInt8] = []
            for base in page { base.encode(into: &bytes) }
            try file.write(contentsOf: bytes)
            written += bytes.count
        }
        return written
    }

    /// The statement and the bases of a file, read whole.
    static func read(_ path: String) throws -> (statement: SignedCheckpoint, bases: [EntityBase]) {
        guard let data = FileManager.default.contents(atPath: path) else { throw CommandError("cannot read \(path)") }
        let bytes = [UInt8](data)
        guard bytes.count >= 9, Array(bytes[0..<4]) == magic, bytes[4] == format else {
            throw CommandError("\(path) is not a PeerSync checkpoint file (it does not start with \"PSCF\", format 1)")
        }
        let length = Int(bytes[5..<9].reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
        guard bytes.count >= 9 + length else { throw CommandError("\(path) ends inside its checkpoint statement") }
        do {
            let statement = try SignedCheckpoint(bytes: Array(bytes[9..<9 + length]))
            var bases: [EntityBase] = []
            var position = 9 + length
            while position < bytes.count { bases.append(try EntityBase.decode(bytes, at: &position)) }
            return (statement, bases)
        } catch let error as CheckpointError {
            throw CommandError("\(path): \(error)")
        }
    }
}
