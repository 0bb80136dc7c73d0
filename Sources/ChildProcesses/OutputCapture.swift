import Foundation

/// Everything a child process writes to one pipe, read by a thread of its
/// own as it arrives so that the pipe never fills and blocks the child.
///
/// Waiting on it is waiting on the child's output, woken by each chunk that
/// arrives and by the end of the pipe: no polling.
///
/// ```swift
/// let child = try ChildProcess(peerd, ["run", "--data", "a"], name: "peerd run (a)")
/// let line = child.stdout.firstLine(startingWith: "listening on ", timeout: .seconds(30))
/// ```
///
/// `@unchecked Sendable`: `data`, `ended` and `generation` are only touched with `changed` held.
public final class OutputCapture: @unchecked Sendable {
    // `data`, `ended` and `generation` are read and written only while
    // `changed` is locked.
    private let changed = NSCondition()
    private var data = Data()
    private var ended = false
    /// Moves on with every chunk and at the end: what a waiter has seen.
    private var generation = 0

    /// Starts reading `handle` until its writer closes it.
    init(_ handle: FileHandle) {
        Thread.detachNewThread { [self] in
            while true {
                let chunk = handle.availableData
                // Closed at once, not whenever this thread's closure goes: a
                // child started later must not find the descriptor still open
                // (Foundation's Process leaks descriptors into children).
                if chunk.isEmpty { try? handle.close() }
                changed.lock()
                if chunk.isEmpty { ended = true } else { data.append(chunk) }
                generation += 1
                changed.broadcast()
                changed.unlock()
                if chunk.isEmpty { return }
            }
        }
    }

    /// A capture of nothing: the output went somewhere else (a file).
    init() {
        ended = true
    }

    /// What arrived so far, as UTF-8 text.
    public var text: String { String(decoding: locked { $0 }, as: UTF8.self) }

    /// The complete lines that arrived so far (a last line without its
    /// newline is left out until it is complete or the pipe ends).
    public var lines: [String] { Self.lines(of: text, complete: !isAtEnd) }

    /// Whether the writer closed the pipe (usually: the child exited) and all of it was read.
    public var isAtEnd: Bool {
        changed.lock()
        defer { changed.unlock() }
        return ended
    }

    /// Waits until `condition` holds for the complete lines so far; false
    /// when the pipe ended or `timeout` passed first without it.
    ///
    /// ```swift
    /// let ready = child.stdout.wait(timeout: .seconds(30)) { lines in lines.contains { $0.hasPrefix("listening on ") } }
    /// ```
    public func wait(timeout: Duration, until condition: ([String]) -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout.timeInterval)
        var seen = -1
        while true {
            changed.lock()
            while generation == seen {
                guard changed.wait(until: deadline) else {
                    changed.unlock()
                    return false
                }
            }
            seen = generation
            let (snapshot, finished) = (data, ended)
            changed.unlock()
            // Outside the lock: the condition may read this capture too.
            if condition(Self.lines(of: String(decoding: snapshot, as: UTF8.self), complete: !finished)) { return true }
            if finished { return false }
        }
    }

    /// The rest of the first complete line that starts with `prefix`,
    /// waiting up to `timeout` for it; nil when the pipe ended or the time passed first.
    public func firstLine(startingWith prefix: String, timeout: Duration) -> String? {
        lines(startingWith: [prefix], timeout: timeout)?.first
    }

    /// The rest of the first complete line that starts with each of
    /// `prefixes` (in the order of `prefixes`), once all of them arrived
    /// within `timeout`; nil otherwise.
    public func lines(startingWith prefixes: [String], timeout: Duration) -> [String]? {
        var found: [String]?
        _ = wait(timeout: timeout) { lines in
            let rests = prefixes.map { prefix in
                lines.first { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) }
            }
            found = rests.contains(nil) ? nil : rests.compactMap { $0 }
            return found != nil
        }
        return found
    }

    /// Waits until the writer closed the pipe; false when `timeout` passed first.
    @discardableResult
    public func waitForEnd(timeout: Duration) -> Bool {
        let deadline = Date().addingTimeInterval(timeout.timeInterval)
        changed.lock()
        defer { changed.unlock() }
        while !ended {
            if !changed.wait(until: deadline) { return ended }
        }
        return true
    }

    private func locked<T>(_ body: (Data) -> T) -> T {
        changed.lock()
        defer { changed.unlock() }
        return body(data)
    }

    /// The lines of `text`; with `complete`, without an unfinished last line.
    static func lines(of text: String, complete: Bool) -> [String] {
        let finished =
            !complete || text.hasSuffix("\n") ? text : String(text[..<(text.lastIndex(of: "\n") ?? text.startIndex)])
        return finished.split(separator: "\n").map(String.init)
    }
}

extension Duration {
    /// The duration in seconds, for Foundation's and Dispatch's APIs.
    var timeInterval: TimeInterval {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
