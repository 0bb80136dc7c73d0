import Foundation

/// A file that a process in a lab host writes its output to, read line by
/// line as it grows: the stdout or the log of a spawned process.
///
/// ```swift
/// let identified = daemon.log.count("peer identified", "peer=\(other.replicaID)")
/// let when = daemon.log.time(of: "connection closed", "remote=10.79.3.12")
/// ```
public struct LabLog: Sendable {
    /// The file.
    public let path: String

    public init(path: String) { self.path = path }

    /// The complete lines written so far (a last line without its newline is left out).
    public var lines: [String] {
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        let complete = text.hasSuffix("\n") ? text : String(text[..<(text.lastIndex(of: "\n") ?? text.startIndex)])
        return complete.split(separator: "\n").map(String.init)
    }

    /// The lines that contain every one of `parts`.
    public func lines(containing parts: String...) -> [String] { lines(containingAll: parts) }

    /// The lines that contain every one of `parts`.
    public func lines(containingAll parts: [String]) -> [String] {
        lines.filter { line in parts.allSatisfy { line.contains($0) } }
    }

    /// How many lines contain every one of `parts`.
    public func count(_ parts: String...) -> Int { lines(containingAll: parts).count }

    /// The `ts=` of the `index`th line that contains every one of `parts`.
    public func time(of parts: String..., index: Int = 0) -> Date? {
        let matching = lines(containingAll: parts)
        guard index < matching.count else { return nil }
        return Self.timestamp(matching[index])
    }

    /// The `ts=2026-11-29T21:59:27.123Z` a log line (peerd's logfmt) starts with.
    public static func timestamp(_ line: String) -> Date? {
        guard let field = line.split(separator: " ").first, field.hasPrefix("ts=") else { return nil }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.date(from: String(field.dropFirst(3)))
    }
}
