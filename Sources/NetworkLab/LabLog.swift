import Foundation

/// A file that a process in a lab host writes its output to, read line by
/// line as it grows: the stdout or the log of a spawned process.
///
/// ```swift
/// let identified = daemon.log.count("peer identified", "peer=\(other.replicaID)")
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
}
