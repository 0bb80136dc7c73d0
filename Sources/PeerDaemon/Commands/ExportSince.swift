import Foundation
import Replica

/// What `peerd export --since FILE` leaves out: the cursor of the replica
/// the export is for (docs/cli.md "Incremental exports"), read from FILE,
/// which holds one of
///
/// - what `peerd status` printed on that replica, as text or with `--json`
///   (its `cursor`), or just the `cursor` array of the JSON;
/// - an export file (full or incremental, from any replica): the cursor a
///   replica holds once it imported it, each feed's last seq in the file.
enum ExportSince {
    /// A status is small; a larger file can only be an export, which is read line by line.
    static let wholeFileLimit = 16 << 20

    /// The cursor in the file at `path` (`-`: standard input).
    static func cursor(from path: String) throws -> VectorCursor {
        do {
            if path != "-", let size = try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int,
                size > wholeFileLimit
            {
                return try streamedExport(path)
            }
            let data =
                path == "-"
                ? FileHandle.standardInput.readDataToEndOfFile() : FileManager.default.contents(atPath: path)
            guard let data else {
                throw ExportSinceError(reason: "cannot read it: \(String(cString: strerror(errno)))")
            }
            return try cursor(in: String(decoding: data, as: UTF8.self))
        } catch let error as ExportSinceError {
            throw CommandError("--since: \(path): \(error.reason)")
        }
    }

    private static func streamedExport(_ path: String) throws -> VectorCursor {
        var ends = ExportEnds()
        do {
            try NDJSONFile.forEachLine(in: path) { event, _ in
                ends.take(event.feed, event.seq)
            } proof: { proof, _ in
                if case .base(let base) = proof { ends.take(base.feed, base.seq) }
            }
        } catch let error as CommandError {
            throw ExportSinceError(
                reason: error.description.replacingOccurrences(of: "; nothing was imported", with: ""))
        }
        return ends.cursor
    }

    /// The cursor in a status (text or JSON) or an export file's text.
    static func cursor(in text: String) throws -> VectorCursor {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        if trimmed.hasPrefix("replica ") { return try statusText(trimmed) }
        if let whole = try? JSONValue.parse(trimmed) {
            if case .array = whole { return try cursorArray(whole) }
            if let cursor = whole["cursor"] { return try cursorArray(cursor) }
        }
        return try exportFile(trimmed)
    }

    /// `peerd status` as text: the lines after `cursor`, `  REPLICA/SCOPE  SEQ`.
    private static func statusText(_ text: String) throws -> VectorCursor {
        let lines = text.split(whereSeparator: \.isNewline).map(String.init)
        guard let start = lines.firstIndex(where: { $0.trimmingCharacters(in: .whitespaces) == "cursor" }) else {
            throw ExportSinceError(reason: "a `peerd status` without its cursor lines")
        }
        var cursor = VectorCursor()
        for line in lines[(start + 1)...] where line.hasPrefix(" ") {
            let words = line.split(separator: " ")
            // Replica ids hold no `/`; a scope may.
            guard words.count == 2, let slash = words[0].firstIndex(of: "/"), let seq = UInt64(words[1]) else {
                throw ExportSinceError(reason: "not a cursor line of `peerd status`: \(line)")
            }
            let feed = FeedID(
                replicaID: String(words[0][..<slash]), scope: String(words[0][words[0].index(after: slash)...]))
            cursor[feed] = seq
        }
        return cursor
    }

    /// `[{"replica_id":…,"scope":…,"seq":…}, …]`, as in `peerd status --json`.
    private static func cursorArray(_ value: JSONValue) throws -> VectorCursor {
        guard case .array(let entries) = value else {
            throw ExportSinceError(reason: "\"cursor\" is not an array of {replica_id, scope, seq}")
        }
        var cursor = VectorCursor()
        for entry in entries {
            guard case .string(let replicaID)? = entry["replica_id"], case .int(let seq)? = entry["seq"], seq >= 0
            else { throw ExportSinceError(reason: "a cursor entry needs replica_id and seq ≥ 0: \(entry)") }
            let scope: String
            switch entry["scope"] {
            case .string(let value)?: scope = value
            case nil, .null?: scope = FeedID.defaultScope
            default: throw ExportSinceError(reason: "a cursor entry's scope is not a string: \(entry)")
            }
            let feed = FeedID(replicaID: replicaID, scope: scope)
            cursor[feed] = max(cursor[feed], UInt64(seq))
        }
        return cursor
    }

    /// An export file: per feed, the highest seq among its events and its base line.
    private static func exportFile(_ text: String) throws -> VectorCursor {
        var ends = ExportEnds()
        var number = 0
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            number += 1
            let line = line.trimmingCharacters(in: .whitespaces)
            if line.isEmpty { continue }
            if line.hasPrefix(#"{"base":"#) {
                guard case .base(let base)? = try? ExportProof.parse(line) else {
                    throw ExportSinceError(reason: "line \(number): not a base line")
                }
                ends.take(base.feed, base.seq)
            } else if line.hasPrefix(#"{"certificate":"#) || line.hasPrefix(#"{"signed_head":"#) {
                continue
            } else {
                guard let event = try? EventJSON.event(fromLine: line) else {
                    throw ExportSinceError(
                        reason: "line \(number) is neither an event nor a proof line, so the file is no export; "
                            + "--since takes what `peerd status` printed (text or --json) or an export file")
                }
                ends.take(event.feed, event.seq)
            }
        }
        return ends.cursor
    }
}

/// Per feed, the last seq an export file brings a replica to.
private struct ExportEnds {
    var cursor = VectorCursor()

    mutating func take(_ feed: FeedID, _ seq: UInt64) {
        cursor[feed] = max(cursor[feed], seq)
    }
}

private struct ExportSinceError: Error {
    let reason: String
}
